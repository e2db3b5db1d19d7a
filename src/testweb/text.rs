//! Deterministic text for the test web: a small seeded PRNG (splitmix64, so
//! bytes never depend on another crate's output stability), topic and common
//! vocabularies, and article bodies built from them.
//!
//! An article is a list of words plus a sentence/paragraph layout; variants
//! re-render the same list with a few words swapped, so "edited words"
//! near-duplicates differ from their original in exactly the chosen positions.

/// The splitmix64 step: a fast, well-mixed 64-bit generator (Steele et al.).
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator for the stream named by `parts` (seed, kind, id, ...).
    pub(crate) fn for_stream(parts: &[u64]) -> Rng {
        let mut s = 0x005E_ED0F_7E57_3EB5_u64;
        for &p in parts {
            s = mix64(s ^ p);
        }
        Rng(s)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.0)
    }

    /// Uniform in `0..n` (`n` > 0; Lemire's multiply-shift, bias negligible here).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// Skewed towards small indexes (a cheap Zipf-like choice) in `0..n`.
    pub(crate) fn skewed(&mut self, n: usize) -> usize {
        let m = self.below(n) + 1;
        self.below(m)
    }
}

/// The splitmix64 finalizer.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Topics of the articles, in the order their ids cycle through.
pub(crate) const TOPICS: [&str; 5] = ["astronomy", "cooking", "football", "gardening", "programming"];

/// Words that mark each topic (index = position in [`TOPICS`]).
pub(crate) const TOPIC_WORDS: [&[&str]; 5] = [
    &[
        "telescope",
        "galaxy",
        "nebula",
        "orbit",
        "planet",
        "comet",
        "asteroid",
        "star",
        "supernova",
        "eclipse",
        "lunar",
        "solar",
        "moon",
        "mars",
        "jupiter",
        "saturn",
        "venus",
        "mercury",
        "neptune",
        "uranus",
        "constellation",
        "observatory",
        "spectrum",
        "redshift",
        "parallax",
        "quasar",
        "pulsar",
        "magnitude",
        "astronomer",
        "cosmology",
        "meteor",
        "crater",
        "gravity",
        "satellite",
        "spacecraft",
        "rocket",
        "cosmos",
        "universe",
        "light-year",
        "exoplanet",
        "dwarf",
        "giant",
        "cluster",
        "horizon",
        "zenith",
        "equinox",
        "solstice",
        "aurora",
        "radiation",
        "infrared",
        "ultraviolet",
        "lens",
        "mirror",
        "aperture",
        "eyepiece",
        "orbital",
        "celestial",
        "astronaut",
        "launch",
        "probe",
        "rover",
        "photon",
        "blackhole",
        "wormhole",
        "darkmatter",
        "milkyway",
        "andromeda",
        "hubble",
        "kepler",
        "galileo",
        "copernicus",
        "equator",
        "meridian",
        "declination",
        "ascension",
        "ecliptic",
        "perihelion",
        "aphelion",
        "transit",
        "occultation",
        "corona",
        "sunspot",
        "flare",
        "plasma",
        "nova",
        "binary",
        "stellar",
        "interstellar",
        "heliocentric",
        "cosmic",
    ],
    &[
        "recipe",
        "oven",
        "flour",
        "butter",
        "sugar",
        "garlic",
        "onion",
        "pepper",
        "salt",
        "olive",
        "simmer",
        "boil",
        "roast",
        "bake",
        "saute",
        "whisk",
        "dough",
        "bread",
        "pasta",
        "sauce",
        "broth",
        "stock",
        "kitchen",
        "chef",
        "skillet",
        "saucepan",
        "knife",
        "chop",
        "dice",
        "mince",
        "basil",
        "thyme",
        "rosemary",
        "oregano",
        "cinnamon",
        "nutmeg",
        "vanilla",
        "chocolate",
        "cream",
        "cheese",
        "yogurt",
        "egg",
        "yolk",
        "tomato",
        "potato",
        "carrot",
        "celery",
        "mushroom",
        "spinach",
        "lemon",
        "vinegar",
        "honey",
        "caramel",
        "dessert",
        "pastry",
        "crust",
        "marinade",
        "grill",
        "braise",
        "poach",
        "fry",
        "ferment",
        "knead",
        "yeast",
        "batter",
        "glaze",
        "seasoning",
        "spice",
        "flavor",
        "texture",
        "crispy",
        "tender",
        "savory",
        "umami",
        "appetizer",
        "entree",
        "casserole",
        "risotto",
        "dumpling",
        "noodle",
        "curry",
        "stew",
        "soup",
        "salad",
        "vinaigrette",
        "mustard",
        "ginger",
        "cumin",
        "paprika",
        "saffron",
    ],
    &[
        "football",
        "goal",
        "striker",
        "midfielder",
        "defender",
        "goalkeeper",
        "referee",
        "penalty",
        "corner",
        "offside",
        "tackle",
        "dribble",
        "header",
        "volley",
        "pitch",
        "stadium",
        "league",
        "championship",
        "cup",
        "season",
        "match",
        "fixture",
        "derby",
        "transfer",
        "coach",
        "manager",
        "squad",
        "captain",
        "substitute",
        "formation",
        "pressing",
        "counterattack",
        "possession",
        "assist",
        "hattrick",
        "equalizer",
        "stoppage",
        "halftime",
        "kickoff",
        "whistle",
        "foul",
        "yellowcard",
        "redcard",
        "winger",
        "fullback",
        "sweeper",
        "crossbar",
        "goalpost",
        "net",
        "freekick",
        "throw-in",
        "supporters",
        "fans",
        "chant",
        "trophy",
        "relegation",
        "promotion",
        "playoff",
        "semifinal",
        "final",
        "scoreline",
        "clean-sheet",
        "tactics",
        "lineup",
        "bench",
        "injury",
        "training",
        "academy",
        "scout",
        "contract",
        "wages",
        "club",
        "rivalry",
        "away",
        "home",
        "aggregate",
        "extra-time",
        "shootout",
        "var",
        "linesman",
        "flank",
        "striking",
        "boots",
        "jersey",
        "kit",
        "turf",
        "dugout",
        "standings",
        "table",
        "points",
    ],
    &[
        "garden",
        "soil",
        "compost",
        "mulch",
        "seed",
        "seedling",
        "sprout",
        "root",
        "stem",
        "leaf",
        "bloom",
        "blossom",
        "petal",
        "pollen",
        "bee",
        "butterfly",
        "weed",
        "hoe",
        "rake",
        "spade",
        "trowel",
        "shears",
        "prune",
        "graft",
        "cutting",
        "perennial",
        "annual",
        "biennial",
        "shrub",
        "hedge",
        "lawn",
        "meadow",
        "greenhouse",
        "polytunnel",
        "raised-bed",
        "irrigation",
        "watering",
        "drought",
        "frost",
        "fertilizer",
        "manure",
        "nitrogen",
        "potassium",
        "phosphorus",
        "loam",
        "clay",
        "sandy",
        "acidic",
        "alkaline",
        "humus",
        "worm",
        "aphid",
        "slug",
        "snail",
        "fungus",
        "mildew",
        "blight",
        "rose",
        "tulip",
        "daffodil",
        "lavender",
        "dahlia",
        "peony",
        "hydrangea",
        "fern",
        "moss",
        "ivy",
        "orchard",
        "apple",
        "pear",
        "plum",
        "cherry",
        "strawberry",
        "raspberry",
        "squash",
        "zucchini",
        "pumpkin",
        "bean",
        "pea",
        "lettuce",
        "kale",
        "cabbage",
        "harvest",
        "sowing",
        "germination",
        "transplant",
        "allotment",
        "horticulture",
        "botanical",
        "foliage",
        "evergreen",
        "deciduous",
    ],
    &[
        "compiler",
        "function",
        "variable",
        "closure",
        "iterator",
        "struct",
        "enum",
        "trait",
        "generic",
        "lifetime",
        "borrow",
        "pointer",
        "reference",
        "memory",
        "allocation",
        "heap",
        "stack",
        "thread",
        "mutex",
        "channel",
        "async",
        "await",
        "future",
        "runtime",
        "scheduler",
        "kernel",
        "syscall",
        "socket",
        "protocol",
        "parser",
        "lexer",
        "token",
        "syntax",
        "grammar",
        "interpreter",
        "bytecode",
        "debugger",
        "breakpoint",
        "stacktrace",
        "exception",
        "panic",
        "unwrap",
        "module",
        "crate",
        "package",
        "dependency",
        "library",
        "framework",
        "api",
        "endpoint",
        "request",
        "response",
        "database",
        "query",
        "index",
        "schema",
        "migration",
        "transaction",
        "cache",
        "latency",
        "throughput",
        "benchmark",
        "profiler",
        "refactor",
        "algorithm",
        "recursion",
        "hashmap",
        "vector",
        "array",
        "string",
        "integer",
        "boolean",
        "bitwise",
        "binary-search",
        "sorting",
        "graph",
        "tree",
        "linked-list",
        "queue",
        "deque",
        "concurrency",
        "parallelism",
        "deadlock",
        "race-condition",
        "unit-test",
        "integration",
        "repository",
        "commit",
        "branch",
        "merge",
    ],
];

/// Common English words: function words first (the skewed choice favours them), then general words.
pub(crate) const COMMON_WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "on",
    "be",
    "by",
    "this",
    "are",
    "from",
    "at",
    "or",
    "an",
    "but",
    "not",
    "have",
    "had",
    "which",
    "they",
    "their",
    "were",
    "been",
    "has",
    "more",
    "when",
    "will",
    "would",
    "there",
    "can",
    "all",
    "so",
    "one",
    "about",
    "into",
    "than",
    "its",
    "also",
    "after",
    "some",
    "over",
    "most",
    "only",
    "other",
    "these",
    "many",
    "while",
    "where",
    "those",
    "then",
    "because",
    "before",
    "every",
    "between",
    "during",
    "without",
    "under",
    "again",
    "still",
    "often",
    "never",
    "always",
    "people",
    "time",
    "year",
    "week",
    "day",
    "morning",
    "evening",
    "night",
    "world",
    "city",
    "village",
    "country",
    "family",
    "friend",
    "neighbour",
    "teacher",
    "student",
    "child",
    "reader",
    "writer",
    "expert",
    "beginner",
    "group",
    "team",
    "member",
    "idea",
    "question",
    "answer",
    "problem",
    "reason",
    "result",
    "change",
    "chance",
    "choice",
    "detail",
    "example",
    "experience",
    "history",
    "method",
    "moment",
    "number",
    "part",
    "place",
    "plan",
    "point",
    "practice",
    "process",
    "project",
    "story",
    "system",
    "way",
    "work",
    "weather",
    "season",
    "summer",
    "winter",
    "spring",
    "autumn",
    "weekend",
    "afternoon",
    "hour",
    "minute",
    "decade",
    "century",
    "small",
    "large",
    "long",
    "short",
    "early",
    "late",
    "new",
    "old",
    "young",
    "good",
    "great",
    "better",
    "best",
    "simple",
    "difficult",
    "careful",
    "quick",
    "slow",
    "quiet",
    "bright",
    "dark",
    "warm",
    "cold",
    "fresh",
    "rare",
    "common",
    "strange",
    "familiar",
    "important",
    "useful",
    "popular",
    "local",
    "national",
    "patient",
    "curious",
    "make",
    "take",
    "give",
    "find",
    "keep",
    "hold",
    "bring",
    "show",
    "try",
    "start",
    "finish",
    "learn",
    "teach",
    "watch",
    "notice",
    "remember",
    "forget",
    "explain",
    "describe",
    "discover",
    "prepare",
    "improve",
    "follow",
    "choose",
    "expect",
    "wonder",
    "believe",
    "suggest",
    "decide",
    "enjoy",
    "share",
    "visit",
    "travel",
    "return",
    "measure",
    "compare",
    "record",
    "report",
    "publish",
    "review",
    "collect",
    "protect",
    "repair",
    "build",
    "quickly",
    "slowly",
    "carefully",
    "finally",
    "usually",
    "perhaps",
    "really",
    "nearly",
    "almost",
    "together",
    "already",
    "certainly",
    "simply",
    "clearly",
    "suddenly",
    "recently",
    "especially",
    "probably",
    "rather",
];

/// One generated text: words, and after which word indexes a sentence or
/// paragraph ends.
#[derive(Clone, Debug)]
pub(crate) struct Text {
    /// The words, lower case.
    pub(crate) words: Vec<&'static str>,
    /// `ends[i]`: 0 = no break after word i, 1 = sentence end, 2 = paragraph end.
    pub(crate) ends: Vec<u8>,
}

/// A word of topic `topic`'s text: about a third topic words, the rest common words.
fn pick_word(rng: &mut Rng, topic: usize) -> &'static str {
    let tw = TOPIC_WORDS[topic];
    match rng.below(100) {
        0..=32 => tw[rng.below(tw.len())],
        33..=44 => tw[rng.skewed(tw.len())],
        45..=69 => COMMON_WORDS[rng.skewed(COMMON_WORDS.len())],
        _ => COMMON_WORDS[rng.below(COMMON_WORDS.len())],
    }
}

/// A text of `min..=max` words on `topic`, sentences of 7..=18 words,
/// paragraphs of 3..=6 sentences.
pub(crate) fn text(rng: &mut Rng, topic: usize, min: usize, max: usize) -> Text {
    let n = rng.range(min, max);
    let mut words = Vec::with_capacity(n + 20);
    let mut ends = Vec::with_capacity(n + 20);
    let mut sentences_left = rng.range(3, 6);
    while words.len() < n {
        let len = rng.range(7, 18);
        for i in 0..len {
            words.push(pick_word(rng, topic));
            ends.push(u8::from(i + 1 == len));
        }
        sentences_left -= 1;
        if sentences_left == 0 {
            if let Some(last) = ends.last_mut() {
                *last = 2;
            }
            sentences_left = rng.range(3, 6);
        }
    }
    if let Some(last) = ends.last_mut() {
        *last = 2;
    }
    Text { words, ends }
}

/// A title of 4..=7 words on `topic`, capitalized.
pub(crate) fn title(rng: &mut Rng, topic: usize) -> String {
    let n = rng.range(4, 7);
    let mut s = String::with_capacity(64);
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        let w = if i % 2 == 0 {
            TOPIC_WORDS[topic][rng.below(TOPIC_WORDS[topic].len())]
        } else {
            COMMON_WORDS[rng.below(COMMON_WORDS.len())]
        };
        push_capitalized(&mut s, w);
    }
    s
}

/// Appends `w` with its first letter upper-cased (the words are ASCII).
pub(crate) fn push_capitalized(out: &mut String, w: &str) {
    let mut chars = w.chars();
    if let Some(c) = chars.next() {
        out.push(c.to_ascii_uppercase());
        out.push_str(chars.as_str());
    }
}

/// Renders `text` as `<p>` paragraphs, replacing word `i` by `w` for each `(i, w)` in `edits`.
pub(crate) fn render_paragraphs(out: &mut String, text: &Text, edits: &[(usize, &'static str)]) {
    out.push_str("<p>");
    let mut sentence_start = true;
    let mut paragraph_start = true;
    for (i, (&w, &end)) in text.words.iter().zip(&text.ends).enumerate() {
        let w = edits.iter().find(|(j, _)| *j == i).map_or(w, |(_, e)| *e);
        if !paragraph_start {
            out.push(' ');
        }
        paragraph_start = end == 2;
        if sentence_start {
            push_capitalized(out, w);
        } else {
            out.push_str(w);
        }
        sentence_start = end > 0;
        match end {
            1 => out.push('.'),
            2 if i + 1 < text.words.len() => out.push_str(".</p>\n<p>"),
            2 => out.push('.'),
            _ => {}
        }
    }
    out.push_str("</p>\n");
}

/// Plain words of a short text (ad copy, doc summaries), as one string.
pub(crate) fn sentence_words(rng: &mut Rng, topic: usize, n: usize) -> String {
    let mut s = String::with_capacity(n * 8);
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(pick_word(rng, topic));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_in_range() {
        let mut a = Rng::for_stream(&[1, 2, 3]);
        let mut b = Rng::for_stream(&[1, 2, 3]);
        let mut c = Rng::for_stream(&[1, 2, 4]);
        let va: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let vb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let vc: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
        for _ in 0..1000 {
            assert!(a.below(7) < 7);
            let r = a.range(3, 5);
            assert!((3..=5).contains(&r));
        }
    }

    #[test]
    fn splitmix_reference_value() {
        // splitmix64 seeded with 0: first output is 0xE220A8397B1DCDAF.
        let mut r = Rng(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn paragraphs_are_sentences_separated_by_spaces() {
        let t = Text {
            words: vec!["one", "two", "three", "four", "five"],
            ends: vec![0, 1, 0, 2, 2],
        };
        let mut out = String::new();
        render_paragraphs(&mut out, &t, &[(2, "zebra")]);
        assert_eq!(out, "<p>One two. Zebra four.</p>\n<p>Five.</p>\n");
    }

    #[test]
    fn texts_have_requested_length_and_differ() {
        let mut r1 = Rng::for_stream(&[9, 1]);
        let mut r2 = Rng::for_stream(&[9, 2]);
        let t1 = text(&mut r1, 0, 300, 800);
        let t2 = text(&mut r2, 0, 300, 800);
        assert!(t1.words.len() >= 300 && t1.words.len() <= 800 + 18);
        assert_eq!(t1.words.len(), t1.ends.len());
        assert_ne!(t1.words, t2.words);
    }
}
