//! What differs between the stored types the generic handler serves: admission (checks and
//! normalisation of an object about to be stored), which changes are allowed (immutable
//! fields), and what follows a write or a deletion (a CustomResourceDefinition registers or
//! removes its type).

use serde_json::Value;

use super::{Api, crd};
use crate::configdata::{configmaps, secrets};
use crate::registry::ResourceType;
use crate::status::ApiError;

/// The per-type hooks.
pub(super) struct Rules {
    /// Check (and normalise) an object about to be stored by a create, update or patch.
    pub admit: fn(&mut Value) -> Result<(), ApiError>,
    /// Check that a stored object may become another (immutable fields).
    pub change: fn(&Value, &Value) -> Result<(), ApiError>,
    /// After an object was stored.
    pub after_write: fn(&Api, &Value),
    /// After an object was deleted.
    pub after_delete: fn(&Api, &Value),
}

fn accept(_: &mut Value) -> Result<(), ApiError> {
    Ok(())
}

fn any_change(_: &Value, _: &Value) -> Result<(), ApiError> {
    Ok(())
}

fn nothing(_: &Api, _: &Value) {}

impl Rules {
    /// The rules of `kind`: ConfigMaps and Secrets are validated as the API server does
    /// ([`configmaps::admit`], [`secrets::admit`]), CustomResourceDefinitions define types
    /// ([`crd`]), everything else is stored as sent.
    pub(super) fn of(kind: &ResourceType) -> Self {
        let plain = Self {
            admit: accept,
            change: any_change,
            after_write: nothing,
            after_delete: nothing,
        };
        match (kind.resource.group.as_ref(), kind.resource.plural.as_ref()) {
            ("", "configmaps") => Self {
                admit: configmaps::admit,
                change: configmaps::change,
                ..plain
            },
            ("", "secrets") => Self {
                admit: secrets::admit,
                change: secrets::change,
                ..plain
            },
            ("apiextensions.k8s.io", "customresourcedefinitions") => Self {
                admit: crd::admit,
                change: crd::change,
                after_write: crd::established,
                after_delete: crd::removed,
            },
            _ => plain,
        }
    }
}
