//! The `pattern:` of CRD schemas, read as Go's `regexp` reads it and run by the `regex` crate.
//!
//! kube-apiserver checks `pattern` with Go's `regexp` (RE2 syntax, unanchored `MatchString`),
//! and rejects a CRD whose pattern Go cannot parse, quoting Go's parse error. The `regex` crate
//! runs the same kind of linear-time automata, but its language differs from Go's in ways a
//! CRD author would notice, so a pattern is translated before it is compiled:
//! - `\d`, `\w`, `\s` and `\b` are ASCII-only in Go and Unicode in Rust: they become explicit
//!   ASCII classes (`\s` is Go's `[\t\n\f\r ]`, without `\v`) and `(?-u:\b)`.
//! - Go reads some text as literals that Rust reads as syntax: a `{` that does not start a
//!   valid repeat, `[` and `&&`/`~~` inside a class, a class opening with `[:`, escaped
//!   punctuation such as `\<`, `\Q...\E` quoting and octal escapes.
//! - Go rejects some syntax Rust accepts (`a**`, repeat counts over 1000, the `x`, `u` and `R`
//!   flags, POSIX class names it does not know), and the error must read as Go's.
//!
//! A pattern Go would reject is `RegexError::Invalid` with Go's message; a pattern whose
//! translation Rust still refuses (nesting deeper than 250 groups, a compiled size over 10 MiB)
//! is `RegexError::Unsupported`: kube-sim accepts it, as Go would, and does not enforce it.
//! Compiled patterns are cached per pattern string, because validation runs on every write.

use regex_syntax::ast::{self, Ast, ErrorKind};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RegexError {
    /// Go's message, e.g. "error parsing regexp: missing closing ): `(a`".
    Invalid(String),
    Unsupported,
}

/// A compiled pattern with Go's matching semantics.
#[derive(Debug, Clone)]
pub(crate) struct Regex(regex::Regex);

/// Patterns come from CRDs, so the set is small; the bound only stops a client that writes
/// endless distinct CRDs from growing the process without limit.
const CACHE_LIMIT: usize = 4096;

type Cache = Mutex<HashMap<String, Result<Regex, RegexError>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

impl Regex {
    /// Compiles `pattern` as Go would, or returns the compiled pattern cached for it.
    pub(crate) fn new(pattern: &str) -> Result<Regex, RegexError> {
        if let Ok(c) = cache().lock()
            && let Some(hit) = c.get(pattern)
        {
            return hit.clone();
        }
        let compiled = compile(pattern);
        if let Ok(mut c) = cache().lock() {
            if c.len() >= CACHE_LIMIT {
                c.clear();
            }
            c.insert(pattern.to_owned(), compiled.clone());
        }
        compiled
    }

    /// Go's `MatchString`: does the pattern match anywhere in `s`?
    pub(crate) fn is_match(&self, s: &str) -> bool {
        self.0.is_match(s)
    }
}

fn go_err(code: &str, expr: &str) -> RegexError {
    RegexError::Invalid(format!("error parsing regexp: {code}: `{expr}`"))
}

fn compile(pattern: &str) -> Result<Regex, RegexError> {
    let tr = translate(pattern)?;
    let parsed = ast::parse::Parser::new().parse(&tr.out);
    let tree = parsed.map_err(|e| parse_error(pattern, &tr, &e))?;
    ast::visit(
        &tree,
        GoOnly {
            src: pattern,
            tr: &tr,
        },
    )?;
    regex::RegexBuilder::new(&tr.out)
        .build()
        .map(Regex)
        .map_err(|_| RegexError::Unsupported)
}

/// The Rust pattern and, for every byte of it, where in the Go pattern it came from, so that
/// errors found by Rust's parser quote the pattern the user wrote.
struct Translation {
    out: String,
    from: Vec<usize>,
    src_len: usize,
}

impl Translation {
    fn src_offset(&self, out_offset: usize) -> usize {
        self.from.get(out_offset).copied().unwrap_or(self.src_len)
    }
}

// Go's POSIX classes (`[[:alpha:]]`); any other name is a parse error in Go.
const POSIX_NAMES: &[&str] = &[
    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
    "space", "upper", "word", "xdigit",
];

struct Translator<'a> {
    src: &'a str,
    pos: usize,
    out: String,
    from: Vec<usize>,
}

fn translate(src: &str) -> Result<Translation, RegexError> {
    let mut t = Translator {
        src,
        pos: 0,
        out: String::with_capacity(src.len() + 8),
        from: Vec::with_capacity(src.len() + 8),
    };
    while let Some(c) = t.peek() {
        match c {
            '\\' => t.escape(false)?,
            '[' => t.class()?,
            '{' => t.brace()?,
            '(' if t.rest().starts_with("(?") => t.group_prefix(),
            '(' | ')' | '|' | '*' | '+' | '?' | '.' | '^' | '$' => {
                let at = t.pos;
                t.pos += c.len_utf8();
                t.emit(c.encode_utf8(&mut [0; 4]), at);
            }
            _ => {
                let at = t.pos;
                t.pos += c.len_utf8();
                t.literal(c, at);
            }
        }
    }
    Ok(Translation {
        out: t.out,
        from: t.from,
        src_len: src.len(),
    })
}

impl Translator<'_> {
    fn rest(&self) -> &str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn next_char(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn since(&self, start: usize) -> &str {
        self.src.get(start..self.pos).unwrap_or("")
    }

    fn emit(&mut self, s: &str, at: usize) {
        self.out.push_str(s);
        self.from.extend(std::iter::repeat_n(at, s.len()));
    }

    /// Text copied as written, each byte remembering its own source offset.
    fn copy(&mut self, s: &str, at: usize) {
        self.out.push_str(s);
        self.from.extend(at..at + s.len());
    }

    /// One character meant literally, escaped where Rust would read it as syntax.
    fn literal(&mut self, c: char, at: usize) {
        if regex_syntax::is_meta_character(c) {
            self.emit("\\", at);
        }
        self.emit(c.encode_utf8(&mut [0; 4]), at);
    }

    /// `(?flags)`, `(?flags:`, `(?P<name>` and `(?<name>` are copied as written: Rust reads
    /// them as Go does, and what Go refuses is found on the parsed tree.
    fn group_prefix(&mut self) {
        let start = self.pos;
        self.pos += 2;
        let rest = self.rest();
        let len = if rest.starts_with("P<") || rest.starts_with('<') {
            rest.find('>').map_or(rest.len(), |i| i + 1)
        } else {
            rest.find([')', ':']).map_or(rest.len(), |i| i + 1)
        };
        self.pos += len;
        let text = self.since(start).to_owned();
        self.copy(&text, start);
    }

    /// A `{` starts a repeat only as `{n}`, `{n,}` or `{n,m}`; otherwise Go reads a literal.
    fn brace(&mut self) -> Result<(), RegexError> {
        let start = self.pos;
        let rest = self.rest();
        let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
        let body = rest.get(1..).unwrap_or("");
        let n1 = digits(body);
        let mut len = 1 + n1;
        let mut max_text = None;
        if n1 > 0 && body.get(n1..).is_some_and(|s| s.starts_with(',')) {
            let n2 = digits(body.get(n1 + 1..).unwrap_or(""));
            max_text = Some(body.get(n1 + 1..n1 + 1 + n2).unwrap_or(""));
            len += 1 + n2;
        }
        if n1 == 0 || rest.get(len..).is_none_or(|s| !s.starts_with('}')) {
            self.pos += 1;
            self.literal('{', start);
            return Ok(());
        }
        len += 1;
        let count = |s: &str| s.parse::<u32>().unwrap_or(u32::MAX);
        let min = count(body.get(..n1).unwrap_or(""));
        let max = match max_text {
            None => Some(min),
            Some("") => None,
            Some(m) => Some(count(m)),
        };
        let text = rest.get(..len).unwrap_or("").to_owned();
        if min > 1000 || max.is_some_and(|m| m > 1000 || m < min) {
            return Err(go_err("invalid repeat count", &text));
        }
        self.pos += len;
        self.copy(&text, start);
        Ok(())
    }

    /// A bracketed class, read by Go's rules: `]` first is literal, `[` inside is literal
    /// unless it opens a POSIX class, and `-` makes a range unless it is last.
    fn class(&mut self) -> Result<(), RegexError> {
        let start = self.pos;
        self.pos += 1;
        self.emit("[", start);
        if self.peek() == Some('^') {
            self.pos += 1;
            self.emit("^", start + 1);
        }
        let mut first = true;
        loop {
            let at = self.pos;
            let Some(c) = self.peek() else {
                let whole = self.src.get(start..).unwrap_or("");
                return Err(go_err("missing closing ]", whole));
            };
            if c == ']' && !first {
                self.pos += 1;
                self.emit("]", at);
                return Ok(());
            }
            first = false;
            if self.rest().starts_with("[:")
                && let Some(end) = self.rest().get(2..).and_then(|r| r.find(":]"))
            {
                let name = self.rest().get(..end + 4).unwrap_or("").to_owned();
                let bare = name.get(2..end + 2).unwrap_or("");
                if !POSIX_NAMES.contains(&bare.strip_prefix('^').unwrap_or(bare)) {
                    return Err(go_err("invalid character class range", &name));
                }
                self.pos += name.len();
                self.copy(&name, at);
                continue;
            }
            if self.rest().starts_with("\\p") || self.rest().starts_with("\\P") {
                self.unicode_class();
                continue;
            }
            if let Some(class) = self.rest().strip_prefix('\\').and_then(perl_class) {
                self.pos += 2;
                self.emit(class, at);
                continue;
            }
            let lo = self.class_char()?;
            let after_lo = self.pos;
            let rest = self.rest();
            if rest.starts_with('-') && rest.get(1..).is_some_and(|r| !r.starts_with(']')) {
                self.pos += 1;
                let hi = self.class_char()?;
                if hi < lo {
                    return Err(go_err("invalid character class range", self.since(at)));
                }
                self.literal(lo, at);
                self.emit("-", after_lo);
                self.literal(hi, after_lo + 1);
            } else {
                self.literal(lo, at);
            }
        }
    }

    /// One class member: a character or a single-character escape.
    fn class_char(&mut self) -> Result<char, RegexError> {
        let start = self.pos;
        match self.next_char() {
            None => Err(go_err("missing closing ]", self.src)),
            Some('\\') => match self.single_char_escape(start)? {
                Some(c) => Ok(c),
                None => Err(go_err("invalid escape sequence", self.since(start))),
            },
            Some(c) => Ok(c),
        }
    }

    /// `\pL` or `\p{Greek}`, copied as written: the names Rust knows are a superset of Go's.
    fn unicode_class(&mut self) {
        let start = self.pos;
        self.pos += 2;
        if self.rest().starts_with('{') {
            self.pos += self.rest().find('}').map_or(self.rest().len(), |i| i + 1);
        } else {
            self.next_char();
        }
        let text = self.since(start).to_owned();
        self.copy(&text, start);
    }

    /// After a backslash outside or inside a class.
    fn escape(&mut self, in_class: bool) -> Result<(), RegexError> {
        let start = self.pos;
        if self.rest().starts_with("\\p") || self.rest().starts_with("\\P") {
            self.unicode_class();
            return Ok(());
        }
        if let Some(class) = self.rest().strip_prefix('\\').and_then(perl_class) {
            self.pos += 2;
            self.emit(class, start);
            return Ok(());
        }
        if !in_class {
            let assertion = match self.rest().get(1..2) {
                Some("A") => Some("\\A"),
                Some("z") => Some("\\z"),
                // Go's word boundary is ASCII.
                Some("b") => Some("(?-u:\\b)"),
                Some("B") => Some("(?-u:\\B)"),
                _ => None,
            };
            if let Some(a) = assertion {
                self.pos += 2;
                self.emit(a, start);
                return Ok(());
            }
            if self.rest().starts_with("\\Q") {
                self.pos += 2;
                let rest = self.rest();
                let (quoted, skip) = match rest.find("\\E") {
                    Some(i) => (rest.get(..i).unwrap_or(""), i + 2),
                    None => (rest, rest.len()),
                };
                let quoted = quoted.to_owned();
                let mut at = self.pos;
                for c in quoted.chars() {
                    self.literal(c, at);
                    at += c.len_utf8();
                }
                self.pos += skip;
                return Ok(());
            }
        }
        self.pos += 1;
        match self.single_char_escape(start)? {
            Some(c) => {
                self.literal(c, start);
                Ok(())
            }
            None => Err(go_err("invalid escape sequence", self.since(start))),
        }
    }

    /// The escapes that stand for one character; `None` for any other (after consuming it).
    /// `self.pos` is just past the backslash that begins at `start`.
    fn single_char_escape(&mut self, start: usize) -> Result<Option<char>, RegexError> {
        let Some(c) = self.next_char() else {
            return Err(go_err("trailing backslash at end of expression", ""));
        };
        let octal = |c: Option<char>| c.and_then(|c| c.to_digit(8));
        Ok(match c {
            // A lone \1..\7 is a backreference, which Go rejects; \0 and longer runs are octal.
            '1'..='7' if octal(self.peek()).is_none() => None,
            '0'..='7' => {
                let mut v = c.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match octal(self.peek()) {
                        Some(d) => {
                            v = v * 8 + d;
                            self.pos += 1;
                        }
                        None => break,
                    }
                }
                char::from_u32(v)
            }
            'x' => {
                let rest = self.rest();
                let (hex, consumed) = if let Some(body) = rest.strip_prefix('{') {
                    let end = body.find('}');
                    let digits = end.and_then(|e| body.get(..e)).unwrap_or("");
                    (digits.to_owned(), end.map_or(rest.len(), |e| e + 2))
                } else {
                    let two = rest.get(..2).unwrap_or(rest);
                    (two.to_owned(), two.len())
                };
                self.pos += consumed;
                let hex = hex.as_str();
                let valid = !hex.is_empty() && hex.chars().all(|d| d.is_ascii_hexdigit());
                let v = valid.then(|| u32::from_str_radix(hex, 16).ok()).flatten();
                match v.and_then(char::from_u32) {
                    Some(ch) => Some(ch),
                    None => return Err(go_err("invalid escape sequence", self.since(start))),
                }
            }
            'a' => Some('\u{7}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            c if c.is_ascii() && !c.is_ascii_alphanumeric() => Some(c),
            _ => None,
        })
    }
}

/// Go's Perl classes, all ASCII, after their backslash; `None` for any other escape.
fn perl_class(rest: &str) -> Option<&'static str> {
    Some(match rest.get(..1)? {
        "d" => "[0-9]",
        "D" => "[^0-9]",
        "w" => "[0-9A-Za-z_]",
        "W" => "[^0-9A-Za-z_]",
        "s" => "[\\t\\n\\f\\r ]",
        "S" => "[^\\t\\n\\f\\r ]",
        _ => return None,
    })
}

/// Go's message for a translated pattern Rust's parser refused, or `Unsupported` where Go
/// would accept what Rust refuses.
fn parse_error(src: &str, tr: &Translation, e: &ast::Error) -> RegexError {
    let s = tr.src_offset(e.span().start.offset);
    let end = tr.src_offset(e.span().end.offset).max(s);
    let text = src.get(s..end).unwrap_or("");
    // Where the `(?` of a group that failed begins.
    let group = || {
        let g = src.get(..=s.min(src.len().saturating_sub(1)));
        g.and_then(|g| g.rfind("(?")).unwrap_or(0)
    };
    match e.kind() {
        ErrorKind::GroupUnclosed => go_err("missing closing )", src),
        ErrorKind::GroupUnopened => go_err("unexpected )", src),
        ErrorKind::ClassUnclosed => go_err("missing closing ]", src.get(s..).unwrap_or("")),
        ErrorKind::RepetitionMissing => {
            go_err("missing argument to repetition operator", repeat_op(src, s))
        }
        ErrorKind::RepetitionCountInvalid => go_err("invalid repeat count", text),
        ErrorKind::ClassRangeInvalid | ErrorKind::ClassRangeLiteral => {
            go_err("invalid character class range", text)
        }
        ErrorKind::UnicodeClassInvalid | ErrorKind::EscapeUnexpectedEof => {
            let from = src.get(..=s.min(src.len().saturating_sub(1)));
            let slash = from.and_then(|f| f.rfind('\\')).unwrap_or(s);
            go_err(
                "invalid character class range",
                src.get(slash..end).unwrap_or(""),
            )
        }
        ErrorKind::GroupNameEmpty
        | ErrorKind::GroupNameInvalid
        | ErrorKind::GroupNameUnexpectedEof
        | ErrorKind::GroupNameDuplicate { .. } => {
            let g = group();
            let rest = src.get(g..).unwrap_or("");
            let named = rest
                .find('>')
                .map_or(rest, |i| rest.get(..=i).unwrap_or(rest));
            go_err("invalid named capture", named)
        }
        ErrorKind::FlagUnrecognized
        | ErrorKind::FlagDanglingNegation
        | ErrorKind::FlagRepeatedNegation { .. }
        | ErrorKind::FlagUnexpectedEof
        | ErrorKind::FlagDuplicate { .. } => go_err(
            "invalid or unsupported Perl syntax",
            src.get(group()..end).unwrap_or(""),
        ),
        _ => RegexError::Unsupported,
    }
}

/// The repetition operator that starts at `at`, as Go quotes it (`*`, `+?`, `{2,3}`).
fn repeat_op(src: &str, at: usize) -> &str {
    let rest = src.get(at..).unwrap_or("");
    let mut len = match rest.chars().next() {
        Some('{') => rest.find('}').map_or(rest.len(), |i| i + 1),
        Some(c) => c.len_utf8(),
        None => 0,
    };
    if rest.get(len..).is_some_and(|r| r.starts_with('?')) {
        len += 1;
    }
    rest.get(..len).unwrap_or(rest)
}

/// What Go refuses but Rust's parser accepts, found on the parsed tree.
struct GoOnly<'a> {
    src: &'a str,
    tr: &'a Translation,
}

impl GoOnly<'_> {
    fn text(&self, start: usize, end: usize) -> &str {
        let (s, e) = (self.tr.src_offset(start), self.tr.src_offset(end));
        self.src.get(s..e.max(s)).unwrap_or("")
    }

    fn flags(&self, group_start: usize, flags: &ast::Flags) -> Result<(), RegexError> {
        // Groups the translation wrote (`(?-u:\b)`) are not the user's to answer for.
        let from = self.tr.src_offset(group_start);
        if !self.src.get(from..).is_some_and(|s| s.starts_with("(?")) {
            return Ok(());
        }
        for item in &flags.items {
            if let ast::FlagsItemKind::Flag(
                ast::Flag::IgnoreWhitespace | ast::Flag::Unicode | ast::Flag::CRLF,
            ) = item.kind
            {
                let text = self.text(group_start, item.span.end.offset);
                return Err(go_err("invalid or unsupported Perl syntax", text));
            }
        }
        Ok(())
    }
}

impl ast::Visitor for GoOnly<'_> {
    type Output = ();
    type Err = RegexError;

    fn finish(self) -> Result<(), RegexError> {
        Ok(())
    }

    fn visit_pre(&mut self, node: &Ast) -> Result<(), RegexError> {
        match node {
            // Perl forbids stacking operators (`a**`, `a+*`); Go follows, Rust reads `(a*)*`.
            Ast::Repetition(outer) => {
                if let Ast::Repetition(inner) = &*outer.ast {
                    let text = self.text(inner.op.span.start.offset, outer.op.span.end.offset);
                    return Err(go_err("invalid nested repetition operator", text));
                }
                Ok(())
            }
            Ast::Flags(set) => self.flags(set.span.start.offset, &set.flags),
            Ast::Group(g) => match &g.kind {
                ast::GroupKind::NonCapturing(flags) => self.flags(g.span.start.offset, flags),
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_like_go() {
        let cases: &[(&str, &str, bool)] = &[
            ("^(Managed|Unmanaged|Force|Removed)$", "Managed", true),
            ("^(Managed|Unmanaged|Force|Removed)$", "Managedx", false),
            ("^(Managed|Unmanaged|Force|Removed)$", "", false),
            (r"^[a-zA-Z0-9\_-]+$", "key_ring-1", true),
            (r"^[a-zA-Z0-9\_-]+$", "key ring", false),
            (r"^[\w\.\-\(\)]*[\w\-\(\)]$", "rg.(x)", true),
            (r"^[\w\.\-\(\)]*[\w\-\(\)]$", "rg.", false),
            (
                "^[a-fA-F0-9]{8}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{12}$",
                "f2007bbf-f802-4a47-9336-cf7c6b89b378",
                true,
            ),
            ("^[a-fA-F0-9]{8}-[a-fA-F0-9]{4}$", "f2007bbf-f80", false),
            (
                r"^arn:(aws|aws-cn):kms:[a-z0-9-]+:[0-9]{12}:(key|alias)\/.*$",
                "arn:aws:kms:us-east-1:123456789012:key/abc",
                true,
            ),
            ("b+", "aabbb", true),
            ("^a{2,3}$", "aaaa", false),
            ("^a{2,}$", "aaaa", true),
            ("(?i)^abc$", "AbC", true),
            (r"\bfoo\b", "a foo b", true),
            (r"\bfoo\b", "afoob", false),
            ("^[^0-9]*$", "abc", true),
            ("^[^0-9]*$", "ab1", false),
            ("^[[:alpha:]]+$", "abc", true),
            ("a.c", "a\nc", false),
            (r"^\d+(\.\d+)?$", "10.5", true),
            ("x{", "x{", true),
            ("", "anything", true),
            // Go's Perl classes and word boundary are ASCII; Rust's would match these.
            (r"^\d+$", "٣", false),
            (r"^\d+$", "12٣", false),
            (r"^\D$", "٣", true),
            (r"^\w+$", "é", false),
            (r"^[\w]+$", "é", false),
            (r"^\s$", "\u{a0}", false),
            (r"^\s$", "\u{b}", false),
            (r"^\s$", "\u{c}", true),
            (r"x\b", "xé", true),
            (r"^\pL+$", "é", true),
            (r"^\p{Greek}+$", "αβ", true),
            (".", "é", true),
            ("^.$", "é", true),
            // Literals where Rust would read syntax.
            ("^a{,3}$", "a{,3}", true),
            ("^a{x}$", "a{x}", true),
            (r"^\<\>$", "<>", true),
            ("^[a[]+$", "a[[", true),
            ("^[a&&b]+$", "&", true),
            ("^[:alpha:]+$", "ah:", true),
            (r"^\Qa.b\E$", "a.b", true),
            (r"^\Qa.b\E$", "axb", false),
            (r"^\101$", "A", true),
            (r"^\x41\x{42}$", "AB", true),
            ("^[]a]+$", "]a", true),
        ];
        for (p, s, want) in cases {
            let re = Regex::new(p).unwrap_or_else(|e| panic!("{p}: {e:?}"));
            assert_eq!(re.is_match(s), *want, "{p} on {s:?}");
        }
    }

    #[test]
    fn errors_like_go() {
        let cases: &[(&str, &str)] = &[
            ("(a", "missing closing ): `(a`"),
            ("a)", "unexpected ): `a)`"),
            ("[a-", "missing closing ]: `[a-`"),
            ("*a", "missing argument to repetition operator: `*`"),
            ("a|+?", "missing argument to repetition operator: `+?`"),
            ("a**", "invalid nested repetition operator: `**`"),
            ("a+*", "invalid nested repetition operator: `+*`"),
            (r"\q", "invalid escape sequence: `\\q`"),
            (r"\1", "invalid escape sequence: `\\1`"),
            (r"\8", "invalid escape sequence: `\\8`"),
            ("[z-a]", "invalid character class range: `z-a`"),
            ("[[:bogus:]]", "invalid character class range: `[:bogus:]`"),
            ("a{1001}", "invalid repeat count: `{1001}`"),
            ("a{2,1}", "invalid repeat count: `{2,1}`"),
            ("(?x)a", "invalid or unsupported Perl syntax: `(?x`"),
            ("(?z)a", "invalid or unsupported Perl syntax: `(?z`"),
            ("a\\", "trailing backslash at end of expression: ``"),
        ];
        for (p, want) in cases {
            assert_eq!(
                Regex::new(p).unwrap_err(),
                RegexError::Invalid(format!("error parsing regexp: {want}")),
                "{p}"
            );
        }
    }

    #[test]
    fn never_panics_and_stays_linear() {
        for p in [
            "",
            "(",
            ")",
            "[",
            "]",
            "\\",
            "{",
            "}",
            "{1,2}",
            "a{1001}",
            "((((",
            "[[:bogus:]]",
            "\\x{zz}",
            "(?P<n",
            "(?z)",
            "a|*",
            "[]a]",
            "\\8",
            "\\p",
            "\\p{",
            "[\\",
            "[a-\\",
            "(?",
            "(?P",
            "\\Q",
            "\\x",
            "\\x{",
            "é{",
            "[é-a]",
            "a{1000}{1000}",
        ] {
            if let Ok(re) = Regex::new(p) {
                let _ = re.is_match("some input ]");
            }
        }
        let re = Regex::new("^(a+)+$").unwrap();
        assert!(!re.is_match(&format!("{}b", "a".repeat(5000))));
    }
}
