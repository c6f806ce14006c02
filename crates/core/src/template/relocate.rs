//! Key-only artifacts: Argo's `HasLocation`, `GetKey`/`SetKey` and `Relocate`.
//!
//! An artifact may name only its key (`s3: {key: path/x.tgz}`) and take the rest — bucket,
//! endpoint, credentials — from the template's `archiveLocation`, which the controller fills
//! from the artifact repository. Argo's rules (`workflow_types.go`, identical v3.3–v4.1):
//!
//! - a location is *complete* ([`ArtifactLocation::is_complete`]) when its kind's required
//!   fields are set: s3 endpoint + bucket + key, gcs bucket + key, azure endpoint +
//!   container + blob, artifactory url + username secret, http url, oss bucket + endpoint +
//!   key, hdfs addresses, git repo, plugin name + configuration + key; raw always; `local`
//!   (ours) a path;
//! - [`ArtifactLocation::relocate`] leaves a complete location alone; otherwise it takes the
//!   artifact's key (its kind must be set, else the artifact is not key-only but empty), copies
//!   the whole archive location and sets that key on the copy — the artifact's own bucket or
//!   endpoint, if it had an incomplete set, gives way to the repository's, as in Argo;
//! - the key is `key` (s3, gcs, oss, plugin), `blob` (azure), `path` (hdfs, local) or the
//!   URL's path (artifactory, http); raw and git have none.
//!
//! Used for inputs (init, before download), outputs that carry a key (wait, before upload)
//! and by anything that deletes or lists artifacts; outputs *without* a key are placed under
//! the archive location by [`ArtifactLocation::child`] instead.

use serde_json::Value;

use super::location::ArtifactLocation;

/// Why an artifact could not be relocated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelocateError {
    /// The artifact names no location kind at all.
    #[error("the artifact has no location (no s3, gcs, azure, … key) to relocate")]
    NoKind,
    /// The artifact is key-only but the template has no archive location.
    #[error(
        "the artifact's {kind} location is incomplete (key only) and the template has no archiveLocation \
         to take the rest from; configure an artifact repository or give the full location"
    )]
    NoArchiveLocation {
        /// The artifact's kind.
        kind: String,
    },
    /// The kind has no key to carry over (raw, git).
    #[error("a {kind} artifact has no key, so it cannot take its location from the archive location")]
    NoKey {
        /// The artifact's kind.
        kind: String,
    },
    /// The archive location's kind cannot take a key.
    #[error("the archive location of kind {kind} cannot hold the artifact's key")]
    UnkeyedArchive {
        /// The archive location's kind.
        kind: String,
    },
}

fn set(s: &Option<String>) -> bool {
    s.as_deref().is_some_and(|v| !v.is_empty())
}

fn extra_str<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The path part of a URL (`https://h:1/a/b?q` → `/a/b`); empty without one.
fn url_path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.find('/').map_or("", |i| &rest[i..]);
    path.split(['?', '#']).next().unwrap_or("")
}

/// `url` with its path replaced by `key`.
fn with_url_path(url: &str, key: &str) -> String {
    let (scheme, rest) = url.split_once("://").map_or(("", url), |(s, r)| (s, r));
    let host = rest.find('/').map_or(rest, |i| &rest[..i]);
    let key = key.trim_start_matches('/');
    if scheme.is_empty() {
        format!("{host}/{key}")
    } else {
        format!("{scheme}://{host}/{key}")
    }
}

impl ArtifactLocation {
    /// Argo's `HasLocation`: the kind present has every field it needs.
    pub fn is_complete(&self) -> bool {
        if self.raw.is_some() {
            return true;
        }
        if let Some(l) = &self.local {
            return !l.path.is_empty();
        }
        if let Some(s) = &self.s3 {
            return set(&s.endpoint) && set(&s.bucket) && !s.key.is_empty();
        }
        if let Some(g) = &self.gcs {
            return set(&g.bucket) && !g.key.is_empty();
        }
        if let Some(a) = &self.azure {
            return set(&a.endpoint) && set(&a.container) && !a.blob.is_empty();
        }
        if let Some(h) = &self.http {
            return !h.url.is_empty();
        }
        if let Some(a) = &self.artifactory {
            return !a.url.is_empty() && a.username_secret.is_some();
        }
        if let Some(o) = self.extra.get("oss") {
            return [
                extra_str(o, "bucket"),
                extra_str(o, "endpoint"),
                extra_str(o, "key"),
            ]
            .iter()
            .all(|s| !s.is_empty());
        }
        if let Some(h) = self.extra.get("hdfs") {
            return h
                .get("addresses")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
        }
        if let Some(g) = self.extra.get("git") {
            return !extra_str(g, "repo").is_empty();
        }
        if let Some(p) = self.extra.get("plugin") {
            return !extra_str(p, "name").is_empty()
                && !p.get("configuration").is_none_or(Value::is_null)
                && !extra_str(p, "key").is_empty();
        }
        false
    }

    /// Argo's `GetKey`: `None` for a kind without keys (raw, git) or no kind.
    pub fn key(&self) -> Option<String> {
        if let Some(l) = &self.local {
            return Some(l.path.clone());
        }
        if let Some(s) = &self.s3 {
            return Some(s.key.clone());
        }
        if let Some(g) = &self.gcs {
            return Some(g.key.clone());
        }
        if let Some(a) = &self.azure {
            return Some(a.blob.clone());
        }
        if let Some(h) = &self.http {
            return Some(url_path(&h.url).to_string());
        }
        if let Some(a) = &self.artifactory {
            return Some(url_path(&a.url).to_string());
        }
        for (kind, field) in [("oss", "key"), ("plugin", "key"), ("hdfs", "path")] {
            if let Some(v) = self.extra.get(kind) {
                return Some(extra_str(v, field).to_string());
            }
        }
        None
    }

    /// Whether the kind present has a non-empty key (Argo's `HasKey`).
    pub fn has_key(&self) -> bool {
        self.key().is_some_and(|k| !k.is_empty())
    }

    /// A copy with the key set (Argo's `SetKey`); `None` for kinds without keys.
    pub fn with_key(&self, key: &str) -> Option<ArtifactLocation> {
        let mut out = self.clone();
        if let Some(l) = out.local.as_mut() {
            l.path = key.to_string();
        } else if let Some(s) = out.s3.as_mut() {
            s.key = key.to_string();
        } else if let Some(g) = out.gcs.as_mut() {
            g.key = key.to_string();
        } else if let Some(a) = out.azure.as_mut() {
            a.blob = key.to_string();
        } else if let Some(h) = out.http.as_mut() {
            h.url = with_url_path(&h.url, key);
        } else if let Some(a) = out.artifactory.as_mut() {
            a.url = with_url_path(&a.url, key);
        } else {
            let (kind, field) = [("oss", "key"), ("plugin", "key"), ("hdfs", "path")]
                .into_iter()
                .find(|(k, _)| out.extra.contains_key(*k))?;
            let v = out.extra.get_mut(kind)?.as_object_mut()?;
            v.insert(field.to_string(), Value::String(key.to_string()));
        }
        Some(out)
    }

    /// Only this location's kind and key: what Argo reports for an artifact it placed under
    /// the archive location (the controller relocates it again when it reads it). Kinds
    /// without keys are returned whole.
    pub fn key_only(&self) -> ArtifactLocation {
        let Some(key) = self.key() else {
            return self.clone();
        };
        let mut bare = ArtifactLocation::default();
        if self.local.is_some() {
            bare.local = Some(Default::default());
        } else if self.s3.is_some() {
            bare.s3 = Some(Default::default());
        } else if self.gcs.is_some() {
            bare.gcs = Some(Default::default());
        } else if self.azure.is_some() {
            bare.azure = Some(Default::default());
        } else if self.http.is_some() {
            bare.http = Some(Default::default());
        } else if self.artifactory.is_some() {
            bare.artifactory = Some(Default::default());
        } else if let Some(kind) = ["oss", "plugin", "hdfs"]
            .into_iter()
            .find(|k| self.extra.contains_key(*k))
        {
            bare.extra
                .insert(kind.to_string(), Value::Object(Default::default()));
        }
        match self.kind_name() {
            Some("http" | "artifactory") => {
                let mut b = bare;
                if let Some(h) = b.http.as_mut() {
                    h.url = key;
                } else if let Some(a) = b.artifactory.as_mut() {
                    a.url = key;
                }
                b
            }
            _ => bare.with_key(&key).unwrap_or_else(|| self.clone()),
        }
    }

    /// Argo's `Relocate`: this location when complete, else the archive location carrying
    /// this artifact's key. Only the location kinds are taken from the archive location:
    /// fields such as `archiveLogs` are not locations.
    ///
    /// # Errors
    /// [`RelocateError`] naming what is missing.
    pub fn relocate(&self, archive: Option<&ArtifactLocation>) -> Result<ArtifactLocation, RelocateError> {
        if self.is_complete() {
            return Ok(self.clone());
        }
        let kind = self.kind_name().ok_or(RelocateError::NoKind)?.to_string();
        let key = self
            .key()
            .ok_or_else(|| RelocateError::NoKey { kind: kind.clone() })?;
        let archive = archive.ok_or(RelocateError::NoArchiveLocation { kind })?;
        let mut out = archive
            .with_key(&key)
            .ok_or_else(|| RelocateError::UnkeyedArchive {
                kind: archive.kind_name().unwrap_or("none").to_string(),
            })?;
        // Keep the artifact's own non-location fields (`from`, `globalName`, …) out of the
        // copy: the caller holds the artifact; this is only where its bytes live.
        out.extra
            .retain(|k, _| super::location::KNOWN_KINDS.contains(&k.as_str()));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn loc(v: Value) -> ArtifactLocation {
        serde_json::from_value(v).unwrap()
    }

    fn repo() -> ArtifactLocation {
        loc(
            json!({"s3": {"endpoint": "minio:9000", "bucket": "b", "insecure": true, "key": "wf/pod",
            "accessKeySecret": {"name": "creds", "key": "ak"}}}),
        )
    }

    #[test]
    fn complete_locations_stay() {
        let full = loc(json!({"s3": {"endpoint": "e", "bucket": "x", "key": "k"}}));
        assert!(full.is_complete());
        assert_eq!(full.relocate(Some(&repo())).unwrap(), full);
        assert!(loc(json!({"raw": {"data": ""}})).is_complete());
        assert!(!loc(json!({"s3": {"key": "k"}})).is_complete());
        assert!(
            !loc(json!({"s3": {"bucket": "x", "key": "k"}})).is_complete(),
            "Argo needs the endpoint too"
        );
    }

    #[test]
    fn key_only_takes_the_repository() {
        let r = loc(json!({"s3": {"key": "in/x.tgz"}}))
            .relocate(Some(&repo()))
            .unwrap();
        let s3 = r.s3.unwrap();
        assert_eq!(
            (s3.key.as_str(), s3.bucket.as_deref(), s3.endpoint.as_deref()),
            ("in/x.tgz", Some("b"), Some("minio:9000"))
        );
        assert_eq!(s3.access_key_secret.unwrap().name, "creds");
        // An incomplete set of the artifact's own gives way to the repository, as in Argo.
        let r = loc(json!({"s3": {"bucket": "mine", "key": "k"}}))
            .relocate(Some(&repo()))
            .unwrap();
        assert_eq!(r.s3.unwrap().bucket.as_deref(), Some("b"));
    }

    #[test]
    fn keys_per_kind() {
        let gcs = loc(json!({"gcs": {"bucket": "g", "key": "wf/pod"}}));
        assert_eq!(
            loc(json!({"gcs": {"key": "a"}}))
                .relocate(Some(&gcs))
                .unwrap()
                .gcs
                .unwrap()
                .key,
            "a"
        );
        let az = loc(json!({"azure": {"endpoint": "https://acct.blob", "container": "c", "blob": "wf"}}));
        let r = loc(json!({"azure": {"blob": "x"}})).relocate(Some(&az)).unwrap();
        assert_eq!(r.azure.unwrap().blob, "x");
        let af = loc(json!({"artifactory": {"url": "https://af.example/repo/wf/pod",
            "usernameSecret": {"name": "u", "key": "k"}}}));
        let r = loc(json!({"artifactory": {"url": "/repo/in/file"}}))
            .relocate(Some(&af))
            .unwrap();
        assert_eq!(r.artifactory.unwrap().url, "https://af.example/repo/in/file");
        let oss = loc(json!({"oss": {"bucket": "o", "endpoint": "e", "key": "wf"}}));
        let r = loc(json!({"oss": {"key": "z"}})).relocate(Some(&oss)).unwrap();
        assert_eq!(r.key().as_deref(), Some("z"));
        assert!(r.is_complete());
    }

    #[test]
    fn key_only_copies_drop_the_repository() {
        let full = repo().child("x.tgz").unwrap();
        let bare = full.key_only();
        assert_eq!(
            serde_json::to_value(&bare).unwrap(),
            json!({"s3": {"key": "wf/pod/x.tgz"}})
        );
        assert_eq!(
            bare.relocate(Some(&repo())).unwrap(),
            full,
            "relocating it again gives it back"
        );
    }

    #[test]
    fn errors_name_what_is_missing() {
        assert_eq!(
            ArtifactLocation::default().relocate(Some(&repo())),
            Err(RelocateError::NoKind)
        );
        let e = loc(json!({"s3": {"key": "k"}})).relocate(None).unwrap_err();
        assert!(e.to_string().contains("no archiveLocation"), "{e}");
        let git = loc(json!({"git": {"revision": "main"}}));
        assert!(matches!(
            git.relocate(Some(&repo())),
            Err(RelocateError::NoKey { .. })
        ));
        let raw_archive = loc(json!({"raw": {"data": "x"}}));
        assert!(matches!(
            loc(json!({"s3": {"key": "k"}})).relocate(Some(&raw_archive)),
            Err(RelocateError::UnkeyedArchive { .. })
        ));
    }
}
