//! Output algorithms of the wait flow (argo-executors.md §4.4), one module each.
//!
//! Shared rule: a path on the main container's *base layer* goes through the runtime seam
//! (the backend decides how to reach it); any other path lies on a volume mirrored into the
//! wait container under `/mainctrfs` and is read directly.

pub mod artifacts;
pub mod logs;
pub mod params;
pub mod result;

/// Remove exactly one trailing newline, as Argo does for results and parameters.
pub fn trim_one_newline(mut s: String) -> String {
    if s.ends_with('\n') {
        s.pop();
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn trims_only_one() {
        assert_eq!(super::trim_one_newline("a\n\n".into()), "a\n");
        assert_eq!(super::trim_one_newline("a".into()), "a");
        assert_eq!(super::trim_one_newline(String::new()), "");
    }
}
