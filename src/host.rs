//! What a crawl calls a host, in one place.
//!
//! - The **host key** ([`host_key`]): the host, with `:port` when the port is
//!   not the scheme's default. The frontier's queues and host statistics, the
//!   scope rules, template learning, mirror detection and the reports key
//!   hosts by it. [`host_key_of_serialized`] and [`split_url`] read it off a
//!   stored canonical URL without parsing it again.
//! - The **origin** ([`origin`]): `scheme://host:port` with the port always
//!   written. robots.txt applies per origin (RFC 9309 section 2.3), so
//!   politeness keys its robots cache, Crawl-delay and request spacing by it.
//!   A host key's URLs share one origin unless a site mixes `http` and
//!   `https` on default ports.
//! - The **registrable domain** ([`registrable_domain`], from the Public
//!   Suffix List) for `scope = "same_domain"`.

use url::Url;

/// A URL's origin: `scheme://host:port`, the port always explicit (defaults
/// filled in).
pub fn origin(url: &Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// The [`host_key`] of an [`origin`] string (`scheme://host:port`): the
/// host, with `:port` unless it is the scheme's default. Any other string
/// is returned as it is.
pub fn host_key_of_origin(origin: &str) -> &str {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return origin;
    };
    let default = match scheme {
        "http" => ":80",
        "https" => ":443",
        _ => return rest,
    };
    match rest.strip_suffix(default) {
        Some(host) if !host.is_empty() && !host.ends_with(':') => host,
        _ => rest,
    }
}

/// A URL's host key: the host, plus `:port` when the port is not the
/// scheme's default. The frontier queues, the scope rules, the template
/// learner and the mirror detector all key hosts by it.
pub fn host_key(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

/// [`host_key`] of a URL serialized by the `url` crate with an `http` or
/// `https` scheme (a canonical URL from the store), read off the string:
/// the authority without its user info. Such a serialization has no default
/// port and ends its authority at the path's `/`, so this equals
/// `host_key(&Url::parse(s)?)` without the parse (resume reads every stored
/// URL's host). `None` for any other string.
pub fn host_key_of_serialized(s: &str) -> Option<&str> {
    if !(s.starts_with("http://") || s.starts_with("https://")) {
        return None;
    }
    let (authority, _) = split_url(s)?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    (!host.is_empty()).then_some(host)
}

/// The registrable domain of a host name (as the `url` crate serializes it:
/// lower case, IDN labels in punycode): its public suffix from the Public
/// Suffix List (ICANN and private sections, compiled into the `psl` crate)
/// plus one label — `www.bbc.co.uk` → `bbc.co.uk`, `alice.github.io` →
/// `alice.github.io`. A name under an unlisted suffix takes its last label
/// as the suffix (`www.news.test` → `news.test`). An IP address, a public
/// suffix itself and a one-label host are their own domain.
pub fn registrable_domain(host: &str) -> &str {
    if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
        return host;
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    psl::domain_str(name).unwrap_or(host)
}

/// Split a URL string into its authority (host and port, with any user
/// info) and its path with query (fragment dropped; an empty path is `/`).
/// None when there is no `scheme://`. For a canonical URL (no user info) the
/// authority is its [`host_key`].
pub fn split_url(url: &str) -> Option<(&str, &str)> {
    // Called per out-link: the delimiters are ASCII, so byte searches find them.
    let rest = &url[memchr::memmem::find(url.as_bytes(), b"://")? + 3..];
    let rest = &rest[..memchr::memchr(b'#', rest.as_bytes()).unwrap_or(rest.len())];
    let end = memchr::memchr2(b'/', b'?', rest.as_bytes()).unwrap_or(rest.len());
    let host = &rest[..end];
    if host.is_empty() {
        return None;
    }
    let path = &rest[end..];
    Some((host, if path.is_empty() { "/" } else { path }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_fill_default_ports() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert_eq!(origin(&u("http://A.test/x?y")), "http://a.test:80");
        assert_eq!(origin(&u("https://a.test:8443/")), "https://a.test:8443");
        assert_eq!(origin(&u("https://a.test/")), "https://a.test:443");
    }

    #[test]
    fn host_keys_of_origins_drop_default_ports() {
        for input in [
            "http://a.test/x",
            "https://a.test:8443/",
            "https://a.test:443/",
            "http://a.test:443/",
            "http://[::1]:8080/",
            "http://[::1]/",
            "http://127.0.0.1:9/",
        ] {
            let u = Url::parse(input).unwrap();
            assert_eq!(host_key_of_origin(&origin(&u)), host_key(&u), "{input}");
        }
        assert_eq!(host_key_of_origin("not an origin"), "not an origin");
    }

    #[test]
    fn registrable_domains_follow_the_public_suffix_list() {
        for (host, domain) in [
            ("www.bbc.co.uk", "bbc.co.uk"),
            ("news.bbc.co.uk", "bbc.co.uk"),
            ("co.uk", "co.uk"),
            ("alice.github.io", "alice.github.io"),
            ("www.example.com", "example.com"),
            ("a.b.c.example", "c.example"),
            ("www.news.test", "news.test"),
            ("localhost", "localhost"),
            ("127.0.0.1", "127.0.0.1"),
            ("[::1]", "[::1]"),
            ("www.xn--bcher-kva.example", "xn--bcher-kva.example"),
            ("shop.xn--85x722f.xn--55qx5d.cn", "xn--85x722f.xn--55qx5d.cn"),
        ] {
            assert_eq!(registrable_domain(host), domain, "{host}");
        }
        // The url crate gives IDN hosts in punycode, which the list matches.
        let u = Url::parse("http://www.bücher.example/").unwrap();
        assert_eq!(registrable_domain(u.host_str().unwrap()), "xn--bcher-kva.example");
    }

    #[test]
    fn split_url_reads_authority_and_path() {
        assert_eq!(split_url("http://a.test:81/x/y?q#f"), Some(("a.test:81", "/x/y?q")));
        assert_eq!(split_url("http://a.test"), Some(("a.test", "/")));
        assert_eq!(split_url("a.test/x"), None);
    }

    #[test]
    fn host_key_of_serialized_equals_host_key_of_the_parsed_url() {
        let inputs = [
            "http://www.news.test:8080/news/cooking/1/",
            "https://Example.COM/a?b=c#d",
            "http://example.com:80/",
            "https://example.com:443/x",
            "https://example.com:8443",
            "http://user:pass@example.com:81/p",
            "http://us%40er@example.com/",
            "http://[::1]:8080/x",
            "http://[2001:DB8::1]/",
            "http://127.0.0.1:9/robots.txt",
            "http://bücher.example/straße",
            "http://example.com?q=1",
            "http://example.com#frag",
            "HTTP://EXAMPLE.com./",
        ];
        for input in inputs {
            let u = Url::parse(input).unwrap();
            assert_eq!(
                host_key_of_serialized(u.as_str()),
                Some(host_key(&u).as_str()),
                "{input}"
            );
        }
        for other in ["ftp://example.com/", "mailto:a@b.c", "http://", "example.com/x"] {
            assert_eq!(host_key_of_serialized(other), None, "{other}");
        }
    }

    proptest::proptest! {
        /// The byte searches split as `str`'s char searches do, on any
        /// text (non-ASCII around the delimiters included).
        #[test]
        fn split_url_splits_as_char_searches_do(url in "(h?ttps?://)?[a-zé:@]{0,4}[/?#]?[a-zé/?#]{0,8}") {
            let by_chars = |url: &str| -> Option<(String, String)> {
                let rest = &url[url.find("://")? + 3..];
                let rest = rest.split('#').next().unwrap_or(rest);
                let end = rest.find(['/', '?']).unwrap_or(rest.len());
                let host = &rest[..end];
                let path = &rest[end..];
                (!host.is_empty()).then(|| (host.to_string(), if path.is_empty() { "/" } else { path }.to_string()))
            };
            let got = split_url(&url).map(|(h, p)| (h.to_string(), p.to_string()));
            proptest::prop_assert_eq!(got, by_chars(&url));
        }
    }
}
