//! Robots directives of a page: `<meta name=robots>` and the
//! `X-Robots-Tag` header (noindex, nofollow, none; user-agent prefixes).

/// Robots directives from `<meta name=robots>` and `X-Robots-Tag`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetaRobots {
    /// `noindex` (or `none`): do not fingerprint or index the page.
    pub noindex: bool,
    /// `nofollow` (or `none`): do not follow the page's links.
    pub nofollow: bool,
}

impl MetaRobots {
    /// Both sets of directives together (the most restrictive wins).
    pub fn merge(self, other: MetaRobots) -> MetaRobots {
        MetaRobots {
            noindex: self.noindex || other.noindex,
            nofollow: self.nofollow || other.nofollow,
        }
    }

    fn apply_directive(&mut self, directive: &str) {
        let d = directive.trim();
        if d.eq_ignore_ascii_case("noindex") {
            self.noindex = true;
        } else if d.eq_ignore_ascii_case("nofollow") {
            self.nofollow = true;
        } else if d.eq_ignore_ascii_case("none") {
            self.noindex = true;
            self.nofollow = true;
        }
    }
}

/// Parses a `<meta name=robots content=...>` value: comma-separated
/// directives, case-insensitive; unknown ones are ignored.
pub fn parse_meta_robots(content: &str) -> MetaRobots {
    let mut r = MetaRobots::default();
    for d in content.split(',') {
        r.apply_directive(d);
    }
    r
}

/// Parses one `X-Robots-Tag` header value (merge several headers, and the
/// page's meta robots, with [`MetaRobots::merge`]).
///
/// Directives without a user-agent prefix apply; a value prefixed by a user
/// agent (`googlebot: noindex`) applies only to that agent and is ignored
/// here, except for the prefix `simcrawl`. Use [`parse_x_robots_tag_for`]
/// with a configured product token.
pub fn parse_x_robots_tag(value: &str) -> MetaRobots {
    parse_x_robots_tag_for(value, "simcrawl")
}

/// [`parse_x_robots_tag`] for the product token `agent` (case-insensitive).
pub fn parse_x_robots_tag_for(value: &str, agent: &str) -> MetaRobots {
    let mut r = MetaRobots::default();
    // A user-agent prefix ("ua: d1, d2") applies to the directives after it.
    // `unavailable_after: DATE` also has a colon: it is not an agent.
    let (applies, rest) = match value.split_once(':') {
        Some((head, tail))
            if !head.trim().is_empty()
                && !head.contains(',')
                && !head.trim().eq_ignore_ascii_case("unavailable_after") =>
        {
            (head.trim().eq_ignore_ascii_case(agent), tail)
        }
        _ => (true, value),
    };
    if applies {
        for d in rest.split(',') {
            r.apply_directive(d);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robots_directives() {
        assert_eq!(
            parse_meta_robots("none"),
            MetaRobots {
                noindex: true,
                nofollow: true
            }
        );
        assert_eq!(parse_x_robots_tag("noindex, nofollow"), parse_meta_robots("none"));
        assert_eq!(parse_x_robots_tag("googlebot: noindex"), MetaRobots::default());
        assert!(parse_x_robots_tag("simcrawl: noindex").noindex);
        assert!(parse_x_robots_tag("unavailable_after: 25 Jun 2010 15:00:00 PST").eq(&MetaRobots::default()));
        assert!(parse_x_robots_tag_for("MyBot: nofollow", "mybot").nofollow);
        let merged = parse_x_robots_tag("nofollow").merge(parse_meta_robots("noindex"));
        assert!(merged.noindex && merged.nofollow);
    }
}
