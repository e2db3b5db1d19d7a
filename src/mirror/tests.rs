//! Tests of offline and online mirror detection.

use super::*;

#[test]
fn split_and_align() {
    let cases = [
        ("/news/x/y.html", "/mirror/news/x/y.html", Some(("/", "/mirror/"))),
        ("/", "/", Some(("/", "/"))),
        ("/docs/", "/mirror/docs/", Some(("/", "/mirror/"))),
        ("/a/", "/b/", Some(("/a/", "/b/"))),
        ("/a.html", "/b.html", None),
        ("/x/a.html", "/a.html", Some(("/x/", "/"))),
        ("/same/p", "/same/p", Some(("/", "/"))),
    ];
    for (p1, p2, want) in cases {
        assert_eq!(align_prefixes(p1, p2), want, "{p1} {p2}");
    }
}

#[test]
fn common_dir_of_paths() {
    let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(common_dir(&v(&["docs/a.html", "docs/b/c.html"])), "docs/");
    assert_eq!(common_dir(&v(&["docs/a.html", "doc/b.html"])), "");
    assert_eq!(common_dir(&v(&["docs/x/", "docs/x/y"])), "docs/x/");
    assert_eq!(common_dir(&v(&["", "docs/x"])), "");
    assert_eq!(common_dir(&v(&[])), "");
}

#[test]
fn union_find_joins() {
    let mut uf = UnionFind::new(4);
    uf.union(0, 1);
    uf.union(2, 3);
    assert_eq!(uf.find(0), uf.find(1));
    assert_ne!(uf.find(1), uf.find(2));
    uf.union(1, 3);
    assert_eq!(uf.find(0), uf.find(2));
}
