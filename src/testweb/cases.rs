//! Regression cases of near-duplicate decisions on real websites,
//! as three small hosts of the test web, and the rules the ground truth
//! (`truth/`) shares with the pages:
//!
//! - `ref.test`: a generated API reference, one short page per property
//!   (20 to 60 words of main text) inside a heavy shared template. Pages of
//!   one class, or of one property in two classes, share most of their words
//!   and differ in a few meaningful ones (`width` / `height`, `GtkLabel` /
//!   `GtkButton`): distinct pages, whose simhash fingerprints are often within
//!   k of each other. Four pages have a near-duplicate copy under `/latest/`
//!   (another build time, or one word changed).
//! - `manual.test`: a manual under `/en/`, `/fr/`, `/de/`, `/es/`. Every
//!   language has its own navigation, headers, footers, prev/next links and
//!   page titles, written as `<nav>`/`<header>`/`<footer>` in some languages
//!   and as DocBook `<div class="navheader">` tables and `<ul class="docnav">`
//!   lists in others, with or without `<html lang>`. Some chapters are
//!   untranslated (the English main text inside translated chrome: near
//!   duplicates of the `/en/` page), the others translated (distinct).
//! - `v1.docs.test`, `v2.docs.test`: two versions of one documentation site
//!   (Sphinx-like), mostly the same paths. Most shared pages have the same
//!   main text (near duplicates: only the version in the chrome, sometimes a
//!   few words, changed), some were rewritten, and each side has pages the
//!   other lacks. Versions are not mirrors.
//!
//! The main text of every page sits between `<!--tw:main-->` and
//! `<!--/tw:main-->`; ref.test build times between `<!--tw:time-->` and
//! `<!--/tw:time-->`.

use std::fmt::Write as _;

use super::generate::{html, not_found};
use super::rng::Rng;
use super::text;
use super::words::TOPIC_WORDS;
use super::{Reply, TestWeb, VariantKind};

/// The ref.test classes: (class name, lower-case noun).
pub(crate) const REF_CLASSES: [(&str, &str); 4] = [
    ("Widget", "widget"),
    ("Window", "window"),
    ("Label", "label"),
    ("Button", "button"),
];

/// What a ref.test page says (its sentence template).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefShape {
    /// A size in pixels.
    Size,
    /// A boolean state.
    Flag,
    /// A method placing the object before or after a sibling.
    Insert(&'static str),
    /// A keybinding signal moving the focus up or down.
    Move(&'static str, &'static str),
}

/// The ref.test members of every class: (name, noun, type, default, shape).
/// The pairs insert-before / insert-after and move-up / move-down differ
/// only in stop words ("before", "after", "up", "above", ...) outside the
/// `<header>`: the same features, so the same simhash, and still a low
/// shingle resemblance.
const REF_MEMBERS: [(&str, &str, &str, &str, RefShape); 10] = [
    ("width", "width", "gint", "-1", RefShape::Size),
    ("height", "height", "gint", "-1", RefShape::Size),
    ("margin-start", "start margin", "gint", "0", RefShape::Size),
    ("margin-end", "end margin", "gint", "0", RefShape::Size),
    ("visible", "visible", "gboolean", "TRUE", RefShape::Flag),
    ("sensitive", "sensitive", "gboolean", "TRUE", RefShape::Flag),
    ("insert-before", "", "void", "", RefShape::Insert("before")),
    ("insert-after", "", "void", "", RefShape::Insert("after")),
    ("move-up", "", "void", "", RefShape::Move("up", "above")),
    ("move-down", "", "void", "", RefShape::Move("down", "below")),
];

/// Number of ref.test property pages (every member of every class).
pub(crate) const REF_ITEMS: usize = REF_CLASSES.len() * REF_MEMBERS.len();

/// The ref.test pages that have a near-duplicate copy under `/latest/`:
/// (item, how the copy differs).
pub(crate) const REF_COPIES: [(usize, VariantKind); 4] = [
    (0, VariantKind::Timestamp),
    (13, VariantKind::Timestamp),
    (21, VariantKind::OneWord),
    (36, VariantKind::OneWord),
];

/// The file name of ref.test item `i`, e.g. `property.Widget.margin-start.html`.
pub(crate) fn ref_file(i: usize) -> String {
    let (class, _) = REF_CLASSES[i / REF_MEMBERS.len()];
    let (name, ..) = REF_MEMBERS[i % REF_MEMBERS.len()];
    format!("property.{class}.{name}.html")
}

/// The ref.test distinct pairs: each property with the next one of its
/// class, and with the same property of the next class.
pub(crate) fn ref_distinct_pairs() -> Vec<(usize, usize)> {
    let m = REF_MEMBERS.len();
    let mut out = Vec::new();
    for i in 0..REF_ITEMS {
        if (i + 1) % m != 0 {
            out.push((i, i + 1));
        }
        if i + m < REF_ITEMS {
            out.push((i, i + m));
        }
    }
    out
}

/// The manual.test languages, `en` first.
pub(crate) const MANUAL_LANGS: [&str; 4] = ["en", "fr", "de", "es"];

/// Chapters of the manual.
pub(crate) const MANUAL_CHAPTERS: usize = 5;

/// Whether chapter `ch` (0-based) of language `lang` is untranslated (the
/// English main text in the language's chrome).
pub(crate) fn manual_untranslated(lang: &str, ch: usize) -> bool {
    match lang {
        "fr" => matches!(ch, 0 | 2 | 3),
        "de" => matches!(ch, 1 | 4),
        "es" => matches!(ch, 0 | 2 | 4),
        _ => false,
    }
}

/// The chrome words of one manual language.
struct ManualLang {
    code: &'static str,
    manual: &'static str,
    chapter: &'static str,
    prev: &'static str,
    next: &'static str,
    home: &'static str,
    up: &'static str,
    contents: &'static str,
    intro: &'static str,
    legal: &'static str,
    titles: [&'static str; MANUAL_CHAPTERS],
    /// Words of the translated main texts.
    words: &'static [&'static str],
}

const MANUAL: [ManualLang; 4] = [
    ManualLang {
        code: "en",
        manual: "Debian Reference",
        chapter: "Chapter",
        prev: "Prev",
        next: "Next",
        home: "Home",
        up: "Up",
        contents: "Table of Contents",
        intro: "This reference gives a broad overview of the system administration of a Debian system.",
        legal: "Copyright the authors. This manual may be distributed under the terms of the GPL version 2 or later.",
        titles: [
            "GNU/Linux tutorials",
            "Debian package management",
            "The system initialization",
            "Authentication and access controls",
            "Network setup",
        ],
        words: &[],
    },
    ManualLang {
        code: "fr",
        manual: "Manuel de référence Debian",
        chapter: "Chapitre",
        prev: "Précédent",
        next: "Suivant",
        home: "Sommaire",
        up: "Niveau supérieur",
        contents: "Table des matières",
        intro: "Ce manuel donne un large aperçu de l'administration d'un système Debian.",
        legal: "Copyright les auteurs. Ce manuel peut être distribué selon les termes de la GPL version 2 ou ultérieure.",
        titles: [
            "Didacticiels GNU/Linux",
            "Gestion des paquets Debian",
            "L'initialisation du système",
            "Authentification et contrôle d'accès",
            "Configuration du réseau",
        ],
        words: &[
            "le", "la", "les", "un", "une", "des", "du", "de", "et", "ou", "pour", "avec", "dans", "sur", "est",
            "sont", "système", "paquet", "fichier", "commande", "utilisateur", "réseau", "configuration",
            "démarrage", "service", "noyau", "disque", "mot", "passe", "serveur", "répertoire", "programme",
            "installer", "modifier", "utiliser", "lancer", "vérifier", "nouveau", "ancien", "simple", "important",
        ],
    },
    ManualLang {
        code: "de",
        manual: "Debian-Referenz",
        chapter: "Kapitel",
        prev: "Zurück",
        next: "Weiter",
        home: "Anfang",
        up: "Nach oben",
        contents: "Inhaltsverzeichnis",
        intro: "Diese Referenz bietet einen umfassenden Überblick über die Systemadministration unter Debian.",
        legal: "Copyright die Autoren. Dieses Handbuch darf unter den Bedingungen der GPL Version 2 oder später weitergegeben werden.",
        titles: [
            "GNU/Linux-Grundlagen",
            "Debian-Paketmanagement",
            "Die Systeminitialisierung",
            "Authentifizierung und Zugriffskontrolle",
            "Netzwerkeinrichtung",
        ],
        words: &[
            "der", "die", "das", "ein", "eine", "und", "oder", "für", "mit", "in", "auf", "ist", "sind", "nicht",
            "System", "Paket", "Datei", "Befehl", "Benutzer", "Netzwerk", "Konfiguration", "Start", "Dienst",
            "Kernel", "Festplatte", "Passwort", "Server", "Verzeichnis", "Programm", "installieren", "ändern",
            "verwenden", "starten", "prüfen", "neue", "alte", "einfach", "wichtig", "wird", "werden",
        ],
    },
    ManualLang {
        code: "es",
        manual: "Referencia de Debian",
        chapter: "Capítulo",
        prev: "Anterior",
        next: "Siguiente",
        home: "Inicio",
        up: "Subir",
        contents: "Índice",
        intro: "Esta referencia ofrece una visión general de la administración de un sistema Debian.",
        legal: "Copyright los autores. Este manual puede distribuirse según los términos de la GPL versión 2 o posterior.",
        titles: [
            "Tutoriales de GNU/Linux",
            "Gestión de paquetes de Debian",
            "La inicialización del sistema",
            "Autenticación y controles de acceso",
            "Configuración de red",
        ],
        words: &[
            "el", "la", "los", "las", "un", "una", "y", "o", "para", "con", "en", "sobre", "es", "son", "no",
            "sistema", "paquete", "archivo", "orden", "usuario", "red", "configuración", "arranque", "servicio",
            "núcleo", "disco", "contraseña", "servidor", "directorio", "programa", "instalar", "cambiar", "usar",
            "iniciar", "comprobar", "nuevo", "antiguo", "sencillo", "importante", "puede",
        ],
    },
];

fn manual_lang(code: &str) -> Option<&'static ManualLang> {
    MANUAL.iter().find(|l| l.code == code)
}

/// What a docs version site holds at one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VersionPage {
    /// The same main text on both versions (other version in the chrome).
    Same,
    /// The same main text with two words edited in v2.
    Edited,
    /// Rewritten in v2: a different main text.
    Rewritten,
    /// Only on v1.
    V1Only,
    /// Only on v2.
    V2Only,
}

/// The content pages of the docs versions: (path, what each version has).
pub(crate) const VERSION_PAGES: [(&str, VersionPage); 20] = [
    ("/guide/intro.html", VersionPage::Same),
    ("/guide/install.html", VersionPage::Same),
    ("/guide/quickstart.html", VersionPage::Edited),
    ("/guide/configuration.html", VersionPage::Same),
    ("/guide/logging.html", VersionPage::Same),
    ("/guide/testing.html", VersionPage::Same),
    ("/guide/plugins.html", VersionPage::Edited),
    ("/guide/upgrading.html", VersionPage::Rewritten),
    ("/guide/migrating.html", VersionPage::V2Only),
    ("/api/client.html", VersionPage::Same),
    ("/api/server.html", VersionPage::Edited),
    ("/api/errors.html", VersionPage::Same),
    ("/api/settings.html", VersionPage::Rewritten),
    ("/api/events.html", VersionPage::Rewritten),
    ("/api/legacy.html", VersionPage::V1Only),
    ("/api/streams.html", VersionPage::V2Only),
    ("/api/auth.html", VersionPage::V2Only),
    ("/api/pool.html", VersionPage::V2Only),
    ("/deploy.html", VersionPage::V2Only),
    ("/faq.html", VersionPage::Same),
];

/// The docs version hosts, v1 first.
pub(crate) const VERSION_HOSTS: [&str; 2] = ["v1.docs.test", "v2.docs.test"];

/// Whether version host `v` (0 = v1, 1 = v2) serves `kind`.
pub(crate) fn version_has(v: usize, kind: VersionPage) -> bool {
    match kind {
        VersionPage::V1Only => v == 0,
        VersionPage::V2Only => v == 1,
        _ => true,
    }
}

/// Words per version-page main text are fixed by the path (so v1 and v2 agree).
fn path_key(path: &str) -> u64 {
    path.bytes().fold(0u64, |h, b| crate::hash::mix64(h ^ u64::from(b)))
}

/// Stream tags of the case pages.
const REF: u64 = 40;
const MANUAL_TEXT: u64 = 41;
const VERSION_TEXT: u64 = 42;

fn page_head(out: &mut String, lang: Option<&str>, title: &str) {
    out.push_str("<!DOCTYPE html>\n<html");
    if let Some(l) = lang {
        let _ = write!(out, " lang=\"{l}\"");
    }
    let _ = write!(
        out,
        "><head><meta charset=\"utf-8\"><title>{title}</title></head>\n<body>\n"
    );
}

const PAGE_END: &str = "</body></html>\n";

impl TestWeb {
    /// ref.test: the front page, property pages and their `/latest/` copies.
    pub(crate) fn reference(&self, path: &str) -> Reply {
        if path == "/" {
            let mut s = String::with_capacity(8192);
            page_head(&mut s, Some("en"), "GTK 4 Reference Manual");
            s.push_str("<h1>GTK 4 Reference Manual</h1>\n<p>Properties of the GTK widget classes.</p>\n<ul>\n");
            for i in 0..REF_ITEMS {
                let f = ref_file(i);
                let _ = writeln!(s, "<li><a href=\"/{f}\">{f}</a></li>");
            }
            s.push_str("</ul>\n<h2>Latest build</h2>\n<ul>\n");
            for (i, _) in REF_COPIES {
                let f = ref_file(i);
                let _ = writeln!(s, "<li><a href=\"/latest/{f}\">{f}</a></li>");
            }
            s.push_str("</ul>\n");
            s.push_str(PAGE_END);
            return html(200, s);
        }
        let (file, copy) = match path.strip_prefix("/latest/") {
            Some(f) => (f, true),
            None => (&path[1..], false),
        };
        let Some(i) = (0..REF_ITEMS).find(|&i| ref_file(i) == file) else {
            return not_found();
        };
        let variant = REF_COPIES.iter().find(|(j, _)| *j == i).map(|(_, k)| *k);
        match (copy, variant) {
            (false, _) => html(200, self.ref_page(i, None)),
            (true, Some(k)) => html(200, self.ref_page(i, Some(k))),
            (true, None) => not_found(),
        }
    }

    /// Property page `i` of ref.test, or its `/latest/` copy of `variant` kind.
    fn ref_page(&self, i: usize, variant: Option<VariantKind>) -> String {
        let m = REF_MEMBERS.len();
        let (class, cls) = REF_CLASSES[i / m];
        let (name, noun, ty, default, shape) = REF_MEMBERS[i % m];
        let mut rng = Rng::for_stream(&[self.opts.seed, REF, i as u64]);
        let mut time = format!(
            "2024-{:02}-{:02} {:02}:{:02} UTC",
            1 + rng.below(12),
            1 + rng.below(28),
            rng.below(24),
            rng.below(60)
        );
        if variant == Some(VariantKind::Timestamp) {
            time = format!("2025-{}", &time[5..]);
        }
        let since = 2 + rng.below(12);
        let mut s = String::with_capacity(12 * 1024);
        page_head(&mut s, Some("en"), &format!("Gtk{class}: GTK 4 Reference Manual"));
        s.push_str("<nav class=\"top\"><a href=\"/\">GTK 4 Reference Manual</a> <a href=\"/\">Classes</a> <a href=\"/\">Interfaces</a> <a href=\"/\">Functions</a> <a href=\"/\">Constants</a></nav>\n");
        s.push_str("<div class=\"toolbar\"><a href=\"/\">Home</a> | Classes | Properties | Signals | Methods | Types | Search the reference by name or by keyword</div>\n");
        s.push_str("<div class=\"sidebar\"><h3>Properties</h3><ul>\n");
        for j in 0..REF_ITEMS {
            let (c, _) = REF_CLASSES[j / m];
            let (n, ..) = REF_MEMBERS[j % m];
            let _ = writeln!(s, "<li><a href=\"/{}\">Gtk.{c}:{n}</a></li>", ref_file(j));
        }
        s.push_str("</ul></div>\n");
        let _ = writeln!(
            s,
            "<div class=\"breadcrumb\"><a href=\"/\">Gtk</a> / <a href=\"/\">Gtk.{class}</a></div>"
        );
        let _ = writeln!(
            s,
            "<div class=\"docblock\"><header><h1>Gtk.{class}:{name}</h1><pre>{name}: {ty}</pre></header>"
        );
        s.push_str("<!--tw:main-->");
        match shape {
            RefShape::Size => {
                let _ = write!(
                    s,
                    "<p>Sets the {noun} of the {cls} in pixels. If the value is -1, the natural {noun} of the {cls} is used.</p>\n<p>Changing the {noun} queues a resize of the {cls} and of its parent.</p>\n"
                );
            }
            RefShape::Flag => {
                let _ = writeln!(
                    s,
                    "<p>Whether the {cls} is {noun}. A {cls} that is not {noun} ignores the pointer and the keyboard.</p>"
                );
            }
            RefShape::Insert(w) => {
                let _ = write!(
                    s,
                    "<p>Inserts the {cls} into its parent {w} the sibling. If the sibling is not set, the {cls} is inserted {w} all the other children of the parent.</p>\n<p>The {cls} also comes {w} the sibling in the focus chain.</p>\n"
                );
            }
            RefShape::Move(w, place) => {
                let _ = writeln!(
                    s,
                    "<p>Moves the keyboard focus {w} to the {cls} in the row {place}. If there is no row {place}, the focus stays on the {cls} and the {cls} emits the keynav-failed signal.</p>"
                );
            }
        }
        if default.is_empty() {
            let _ = writeln!(s, "<p>Kind: method. Available since: 4.{since}.</p>");
        } else {
            let _ = writeln!(
                s,
                "<p>Type: {ty}. Flags: read, write. Default value: {default}. Available since: 4.{since}.</p>"
            );
        }
        if i.is_multiple_of(3) {
            let _ = writeln!(s, "<p>Deprecated since 4.10: use a layout manager instead.</p>");
        }
        let last = if variant == Some(VariantKind::OneWord) {
            "unstable"
        } else {
            "stable"
        };
        let _ = writeln!(s, "<p>Stability: {last}.</p>");
        s.push_str("<!--/tw:main--></div>\n");
        // The build time sits in the footer, as generators put it: a copy
        // from another build differs there only.
        let _ = writeln!(
            s,
            "<footer><p>The GTK Project. Generated by gi-docgen. Licensed under the GNU Lesser General Public License, version 2.1 or later.</p><p>Built <!--tw:time-->{time}<!--/tw:time--> from the introspection data.</p></footer>"
        );
        s.push_str(PAGE_END);
        s
    }

    /// manual.test: the language chooser `/`, each language's contents page
    /// `/{lang}/` and chapters `/{lang}/ch{NN}.html`.
    pub(crate) fn manual(&self, path: &str) -> Reply {
        if path == "/" {
            let mut s = String::with_capacity(1024);
            page_head(&mut s, None, "Debian Reference: languages");
            s.push_str("<h1>Debian Reference</h1>\n<ul>\n");
            for l in &MANUAL {
                let _ = writeln!(s, "<li><a href=\"/{}/\">{}</a></li>", l.code, l.manual);
            }
            s.push_str("</ul>\n");
            s.push_str(PAGE_END);
            return html(200, s);
        }
        let mut segs = path[1..].splitn(2, '/');
        let (Some(code), Some(rest)) = (segs.next(), segs.next()) else {
            return not_found();
        };
        let Some(lang) = manual_lang(code) else {
            return not_found();
        };
        if rest.is_empty() {
            return html(200, self.manual_contents(lang));
        }
        let ch = rest
            .strip_prefix("ch")
            .and_then(|r| r.strip_suffix(".html"))
            .filter(|r| r.len() == 2)
            .and_then(|r| r.parse::<usize>().ok());
        match ch {
            Some(n) if (1..=MANUAL_CHAPTERS).contains(&n) => html(200, self.manual_chapter(lang, n - 1)),
            _ => not_found(),
        }
    }

    /// The title of chapter `ch` as shown in language `lang` (English when untranslated).
    fn manual_title(lang: &ManualLang, ch: usize) -> &'static str {
        if lang.code == "en" || manual_untranslated(lang.code, ch) {
            MANUAL[0].titles[ch]
        } else {
            lang.titles[ch]
        }
    }

    fn manual_contents(&self, lang: &ManualLang) -> String {
        let mut s = String::with_capacity(2048);
        page_head(&mut s, Some(lang.code), lang.manual);
        let _ = writeln!(
            s,
            "<div class=\"navheader\"><a href=\"/\">{}</a></div>\n<h1>{}</h1>\n<p>{}</p>\n<h2>{}</h2>\n<ul class=\"toc\">",
            lang.home, lang.manual, lang.intro, lang.contents
        );
        for ch in 0..MANUAL_CHAPTERS {
            let _ = writeln!(
                s,
                "<li><a href=\"ch{:02}.html\">{} {}. {}</a></li>",
                ch + 1,
                lang.chapter,
                ch + 1,
                Self::manual_title(lang, ch)
            );
        }
        let _ = writeln!(s, "</ul>\n<div class=\"legalnotice\"><p>{}</p></div>", lang.legal);
        s.push_str(PAGE_END);
        s
    }

    /// The main text of chapter `ch` in `lang` (English when untranslated):
    /// 150 to 450 words.
    fn manual_text(&self, lang: &ManualLang, ch: usize) -> String {
        let translated = lang.code != "en" && !manual_untranslated(lang.code, ch);
        let mut rng = Rng::for_stream(&[self.opts.seed, MANUAL_TEXT, ch as u64]);
        let n = rng.range(150, 450);
        let mut s = String::with_capacity(n * 9);
        if translated {
            let mut rng = Rng::for_stream(&[self.opts.seed, MANUAL_TEXT, ch as u64, path_key(lang.code)]);
            let mut left = n;
            while left > 0 {
                let len = rng.range(8, 16).min(left);
                s.push_str("<p>");
                for k in 0..len {
                    let w = lang.words[rng.below(lang.words.len())];
                    if k == 0 {
                        text::push_capitalized(&mut s, w);
                    } else {
                        s.push(' ');
                        s.push_str(w);
                    }
                }
                s.push_str(".</p>\n");
                left -= len;
            }
        } else {
            // Programming-topic English.
            let t = text::text(&mut rng, 4, n, n);
            text::render_paragraphs(&mut s, &t, &[]);
        }
        s
    }

    /// Chapter `ch` (0-based) in `lang`: the language's chrome around the
    /// chapter's main text (English when untranslated).
    fn manual_chapter(&self, lang: &ManualLang, ch: usize) -> String {
        let n = ch + 1;
        let title = Self::manual_title(lang, ch);
        let prev = (ch > 0).then(|| (format!("ch{:02}.html", n - 1), Self::manual_title(lang, ch - 1)));
        let next = (n < MANUAL_CHAPTERS).then(|| (format!("ch{:02}.html", n + 1), Self::manual_title(lang, ch + 1)));
        let mut s = String::with_capacity(8192);
        // en and de: no <html lang> on chapters (de relies on detection).
        let declared = matches!(lang.code, "fr" | "es").then_some(lang.code);
        page_head(
            &mut s,
            declared,
            &format!("{} {n}. {title} - {}", lang.chapter, lang.manual),
        );
        let link = |s: &mut String, l: &Option<(String, &str)>, word: &str| {
            if let Some((href, _)) = l {
                let _ = write!(s, "<a accesskey=\"p\" href=\"{href}\">{word}</a>");
            }
        };
        match lang.code {
            // fr: structural HTML5 chrome.
            "fr" => {
                let _ = writeln!(
                    s,
                    "<header><p>{} — {} {n}</p></header>\n<nav>",
                    lang.manual, lang.chapter
                );
                link(&mut s, &prev, lang.prev);
                let _ = write!(s, " <a href=\"./\">{}</a> ", lang.home);
                link(&mut s, &next, lang.next);
                s.push_str("</nav>\n");
            }
            // es: a <nav> bar on top.
            "es" => {
                let _ = write!(s, "<nav><a href=\"./\">{}</a> ", lang.manual);
                link(&mut s, &prev, lang.prev);
                s.push(' ');
                link(&mut s, &next, lang.next);
                s.push_str("</nav>\n");
            }
            // en and de: a DocBook navheader table.
            _ => {
                let _ = write!(
                    s,
                    "<div class=\"navheader\"><table width=\"100%\"><tr><th colspan=\"3\" align=\"center\">{} {n}. {title}</th></tr><tr><td width=\"20%\" align=\"left\">",
                    lang.chapter
                );
                link(&mut s, &prev, lang.prev);
                let _ = write!(
                    s,
                    " </td><th width=\"60%\" align=\"center\">{}</th><td width=\"20%\" align=\"right\"> ",
                    lang.manual
                );
                link(&mut s, &next, lang.next);
                s.push_str("</td></tr></table><hr></div>\n");
            }
        }
        let _ = write!(
            s,
            "<div class=\"chapter\"><!--tw:main--><h1 class=\"title\">{n}. {title}</h1>\n{}<!--/tw:main--></div>\n",
            self.manual_text(lang, ch)
        );
        match lang.code {
            "fr" => {
                s.push_str("<nav class=\"bottom\">");
                if let Some((href, t)) = &prev {
                    let _ = write!(s, "<a href=\"{href}\">{} : {t}</a> ", lang.prev);
                }
                if let Some((href, t)) = &next {
                    let _ = write!(s, "<a href=\"{href}\">{} : {t}</a>", lang.next);
                }
                let _ = writeln!(s, "</nav>\n<footer><p>{}</p></footer>", lang.legal);
            }
            // en, de, es: a DocBook docnav list and a plain legal notice.
            _ => {
                s.push_str("<ul class=\"docnav\">");
                if let Some((href, t)) = &prev {
                    let _ = write!(
                        s,
                        "<li class=\"previous\"><a href=\"{href}\"><strong>{}</strong> {t}</a></li>",
                        lang.prev
                    );
                }
                let _ = write!(
                    s,
                    "<li class=\"up\"><a href=\"./\"><strong>{}</strong></a></li>",
                    lang.up
                );
                let _ = write!(
                    s,
                    "<li class=\"home\"><a href=\"./\"><strong>{}</strong></a></li>",
                    lang.home
                );
                if let Some((href, t)) = &next {
                    let _ = write!(
                        s,
                        "<li class=\"next\"><a href=\"{href}\"><strong>{}</strong> {t}</a></li>",
                        lang.next
                    );
                }
                let _ = writeln!(s, "</ul>\n<div class=\"legalnotice\"><p>{}</p></div>", lang.legal);
            }
        }
        s.push_str(PAGE_END);
        s
    }

    /// v1.docs.test and v2.docs.test (`v` = 0 or 1).
    pub(crate) fn versions(&self, v: usize, path: &str) -> Reply {
        let version = ["1.8", "2.1"][v];
        if path == "/" {
            let mut s = String::with_capacity(4096);
            page_head(
                &mut s,
                Some("en"),
                &format!("Welcome to Foo {version} — Foo {version} documentation"),
            );
            let _ = writeln!(
                s,
                "<h1>Welcome to Foo {version}</h1>\n<p>Foo is a library for talking to Foo servers. This is the documentation of release {version}.</p>\n<ul class=\"toctree\">"
            );
            for (p, kind) in VERSION_PAGES.iter().filter(|(_, k)| version_has(v, *k)) {
                let _ = writeln!(s, "<li><a href=\"{}\">{}</a></li>", &p[1..], version_title(p, *kind, v));
            }
            s.push_str("</ul>\n");
            s.push_str(PAGE_END);
            return html(200, s);
        }
        let Some((p, kind)) = VERSION_PAGES.iter().find(|(p, k)| *p == path && version_has(v, *k)) else {
            return not_found();
        };
        let title = version_title(p, *kind, v);
        let depth = p.matches('/').count() - 1;
        let root = "../".repeat(depth);
        let mut s = String::with_capacity(8192);
        page_head(&mut s, Some("en"), &format!("{title} — Foo {version} documentation"));
        let _ = writeln!(
            s,
            "<div class=\"related\" role=\"navigation\"><ul><li><a href=\"{root}\">Foo {version} documentation</a></li><li>{title}</li></ul></div>"
        );
        let _ = writeln!(
            s,
            "<div class=\"document\"><div class=\"body\" role=\"main\"><!--tw:main--><h1>{title}</h1>"
        );
        // Main text: fixed by the path (v1 and v2 agree), except rewritten
        // pages on v2 and v2's few edits.
        let rewritten = v == 1 && *kind == VersionPage::Rewritten;
        let mut rng = Rng::for_stream(&[self.opts.seed, VERSION_TEXT, path_key(p), u64::from(rewritten)]);
        let n = rng.range(300, 500);
        let t = text::text(&mut rng, 4, n, n);
        let mut edits = Vec::new();
        if v == 1 && *kind == VersionPage::Edited {
            let words = TOPIC_WORDS[4];
            let mut e = Rng::for_stream(&[self.opts.seed, VERSION_TEXT, path_key(p), 7]);
            while edits.len() < 2 {
                let pos = e.below(t.words.len());
                let w = words[e.below(words.len())];
                if w != t.words[pos] && edits.iter().all(|(q, _)| *q != pos) {
                    edits.push((pos, w));
                }
            }
        }
        text::render_paragraphs(&mut s, &t, &edits);
        s.push_str("<!--/tw:main--></div></div>\n");
        let _ = writeln!(
            s,
            "<div class=\"sphinxsidebar\" role=\"navigation\"><h3><a href=\"{root}\">Table of Contents</a></h3><ul>"
        );
        for (q, k) in VERSION_PAGES.iter().filter(|(_, k)| version_has(v, *k)) {
            let _ = writeln!(
                s,
                "<li><a href=\"{root}{}\">{}</a></li>",
                &q[1..],
                version_title(q, *k, v)
            );
        }
        let _ = writeln!(
            s,
            "</ul></div>\n<div class=\"footer\">Copyright the Foo developers. Created using Sphinx. Foo {version}.</div>"
        );
        s.push_str(PAGE_END);
        html(200, s)
    }
}

/// The title of a docs version page: its file name, capitalized (rewritten
/// pages get a new title on v2).
fn version_title(path: &str, kind: VersionPage, v: usize) -> String {
    let stem = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".html");
    let mut s = String::with_capacity(32);
    text::push_capitalized(&mut s, stem);
    if kind == VersionPage::Rewritten && v == 1 {
        s.push_str(" (new in 2.x)");
    }
    s
}
