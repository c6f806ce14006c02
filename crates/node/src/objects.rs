//! The ConfigMaps and Secrets a pod reads, as the kubelet reads them from the API server:
//! `configMap` and `secret` volumes when the pod starts, `configMapKeyRef`/`secretKeyRef`
//! env and `envFrom` when each container is created.
//!
//! The node asks an [`ObjectSource`] (the node server's store, [`StaticObjects`] in tests);
//! [`crate::NodeConfig::secrets`] answers for Secrets the source does not have. A missing
//! object or key is a [`ConfigError`] worded as the kubelet words it.

use std::collections::BTreeMap;
use std::sync::Arc;

/// The data of one ConfigMap (`data` and `binaryData` together) or Secret (decoded):
/// key → bytes.
pub type ObjectData = BTreeMap<String, Vec<u8>>;

/// Where the node looks up the ConfigMaps and Secrets of a pod's namespace.
pub trait ObjectSource: Send + Sync {
    /// ConfigMap `name` in `namespace`, if it exists.
    fn config_map(&self, namespace: &str, name: &str) -> Option<ObjectData>;
    /// Secret `name` in `namespace`, if it exists.
    fn secret(&self, namespace: &str, name: &str) -> Option<ObjectData>;
}

/// Objects held in memory, by name, visible in every namespace (tests, callers without an
/// API server).
#[derive(Clone, Default)]
pub struct StaticObjects {
    /// ConfigMaps by name.
    pub config_maps: BTreeMap<String, ObjectData>,
    /// Secrets by name.
    pub secrets: BTreeMap<String, ObjectData>,
}

impl ObjectSource for StaticObjects {
    fn config_map(&self, _namespace: &str, name: &str) -> Option<ObjectData> {
        self.config_maps.get(name).cloned()
    }

    fn secret(&self, _namespace: &str, name: &str) -> Option<ObjectData> {
        self.secrets.get(name).cloned()
    }
}

impl std::fmt::Debug for StaticObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticObjects")
            .field("config_maps", &keys_only(&self.config_maps))
            .field("secrets", &keys_only(&self.secrets))
            .finish()
    }
}

/// Names and keys of `objects`, never their values (Debug output of secrets).
pub(crate) fn keys_only(objects: &BTreeMap<String, ObjectData>) -> BTreeMap<&str, Vec<&str>> {
    objects
        .iter()
        .map(|(n, d)| (n.as_str(), d.keys().map(String::as_str).collect()))
        .collect()
}

/// Which of the two kinds a reference names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataKind {
    /// `v1` `ConfigMap`.
    ConfigMap,
    /// `v1` `Secret`.
    Secret,
}

impl DataKind {
    /// The kubelet's lower-case noun (`configmap "x" not found`).
    pub fn noun(self) -> &'static str {
        match self {
            Self::ConfigMap => "configmap",
            Self::Secret => "secret",
        }
    }

    /// The kind (`couldn't find key k in Secret ns/x`).
    pub fn kind(self) -> &'static str {
        match self {
            Self::ConfigMap => "ConfigMap",
            Self::Secret => "Secret",
        }
    }
}

/// A reference to a ConfigMap or Secret that cannot be resolved, in the kubelet's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The object does not exist.
    #[error("{} {name:?} not found", kind.noun())]
    NotFound {
        /// ConfigMap or Secret.
        kind: DataKind,
        /// Its name.
        name: String,
    },
    /// An env var names a key the object does not have.
    #[error("couldn't find key {key} in {} {namespace}/{name}", kind.kind())]
    NoKey {
        /// ConfigMap or Secret.
        kind: DataKind,
        /// The pod's namespace.
        namespace: String,
        /// The object's name.
        name: String,
        /// The missing key.
        key: String,
    },
    /// A volume's `items` name a key the object does not have.
    #[error("{}", volume_key_message(*kind, key))]
    NoVolumeKey {
        /// ConfigMap or Secret.
        kind: DataKind,
        /// The missing key.
        key: String,
    },
}

fn volume_key_message(kind: DataKind, key: &str) -> String {
    match kind {
        DataKind::ConfigMap => format!("configmap references non-existent config key: {key}"),
        DataKind::Secret => format!("references non-existent secret key: {key}"),
    }
}

/// One pod's view: its namespace in the source, then the node's own secrets.
#[derive(Clone)]
pub(crate) struct PodObjects {
    source: Arc<dyn ObjectSource>,
    node_secrets: Arc<BTreeMap<String, ObjectData>>,
    namespace: String,
}

impl PodObjects {
    /// The objects of `namespace`.
    pub fn new(
        source: Arc<dyn ObjectSource>,
        node_secrets: Arc<BTreeMap<String, ObjectData>>,
        namespace: &str,
    ) -> Self {
        Self {
            source,
            node_secrets,
            namespace: namespace.to_string(),
        }
    }

    /// The pod's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The object `kind`/`name`, if it exists.
    pub fn get(&self, kind: DataKind, name: &str) -> Option<ObjectData> {
        match kind {
            DataKind::ConfigMap => self.source.config_map(&self.namespace, name),
            DataKind::Secret => self
                .source
                .secret(&self.namespace, name)
                .or_else(|| self.node_secrets.get(name).cloned()),
        }
    }

    /// The object, or [`ConfigError::NotFound`].
    ///
    /// # Errors
    /// The object does not exist.
    pub fn require(&self, kind: DataKind, name: &str) -> Result<ObjectData, ConfigError> {
        self.get(kind, name).ok_or_else(|| ConfigError::NotFound {
            kind,
            name: name.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_secrets_fill_in_and_messages_match_the_kubelet() {
        let source = StaticObjects {
            secrets: BTreeMap::from([("s".into(), ObjectData::from([("k".into(), b"store".to_vec())]))]),
            ..Default::default()
        };
        let node = BTreeMap::from([
            ("s".into(), ObjectData::from([("k".into(), b"node".to_vec())])),
            ("n".into(), ObjectData::from([("k".into(), b"node".to_vec())])),
        ]);
        let objects = PodObjects::new(Arc::new(source), Arc::new(node), "ns");
        assert_eq!(objects.get(DataKind::Secret, "s").unwrap()["k"], b"store");
        assert_eq!(objects.get(DataKind::Secret, "n").unwrap()["k"], b"node");
        assert!(objects.get(DataKind::ConfigMap, "n").is_none());
        let e = objects.require(DataKind::Secret, "gone").unwrap_err();
        assert_eq!(e.to_string(), "secret \"gone\" not found");
        let e = ConfigError::NoKey {
            kind: DataKind::ConfigMap,
            namespace: "ns".into(),
            name: "c".into(),
            key: "k".into(),
        };
        assert_eq!(e.to_string(), "couldn't find key k in ConfigMap ns/c");
    }

    #[test]
    fn debug_output_has_no_values() {
        let s = StaticObjects {
            secrets: BTreeMap::from([("s".into(), ObjectData::from([("k".into(), b"hunter2".to_vec())]))]),
            ..Default::default()
        };
        assert_eq!(
            format!("{s:?}"),
            r#"StaticObjects { config_maps: {}, secrets: {"s": ["k"]} }"#
        );
    }
}
