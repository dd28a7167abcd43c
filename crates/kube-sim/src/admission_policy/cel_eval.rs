//! CEL for admission policies, on the `cel` crate (cel-rust): compiling with the checks the API
//! server makes when a policy is written (syntax, undeclared names), converting JSON objects
//! into CEL values, and evaluating.
//!
//! cel-rust parses with an ANTLR runtime whose stack use is large (well over 100 KiB per nesting
//! level in debug builds), and both its parser and its evaluator recurse over the tree. So every
//! compile and evaluation runs on a thread of its own with a large stack ([`on_cel_thread`]),
//! an expression is refused past [`MAX_EXPRESSION_LEN`] code points or [`MAX_DEPTH`] levels of
//! syntax tree (cel-rust itself refuses more than 96 nested parentheses, brackets or calls), and
//! a panic inside the crate becomes an error. Nothing here may take the server down.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::objects::{Key, Map as CelMap};
use cel::{Context, Env, Program, Value as Cel};
use serde_json::Value;

/// Longest expression compiled, in code points. cel-go allows 100,000; kube-sim's limit keeps
/// the parser's stack use bounded (documented in docs/kube-sim.md).
pub const MAX_EXPRESSION_LEN: usize = 10_000;
/// Deepest syntax tree accepted: cel-go's default parser recursion limit.
pub const MAX_DEPTH: usize = 250;
/// The CEL thread's stack: reserved address space, touched only as deep as a parse goes.
const CEL_STACK: usize = 256 << 20;
/// Compiled programs kept; the cache starts over past this.
const CACHE_LIMIT: usize = 1024;

/// The names an expression may use besides CEL's own, as the API server declares them for each
/// kind of expression: `params` only when the policy has a paramKind, `authorizer` everywhere
/// but in message expressions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Declarations {
    pub params: bool,
    pub authorizer: bool,
}

/// Runs `f` on a thread with a stack large enough for cel-rust; `None` if the thread could not
/// start or `f` panicked.
pub fn on_cel_thread<T: Send>(f: impl FnOnce() -> T + Send) -> Option<T> {
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("kube-sim-cel".into())
            .stack_size(CEL_STACK)
            .spawn_scoped(s, f)
            .ok()?;
        handle.join().ok()
    })
}

fn env() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // Kubernetes CEL includes cel-go's strings extension (`join`, `split`, `lowerAscii`, ...).
        let _ = cel::extensions::strings(&mut env);
        Arc::new(env)
    })
    .clone()
}

type CacheKey = (String, Declarations);
type Compiled = Result<Arc<Program>, String>;

fn cache() -> &'static Mutex<HashMap<CacheKey, Compiled>> {
    static CACHE: OnceLock<Mutex<HashMap<CacheKey, Compiled>>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// Compiles an expression (call on the CEL thread). The error is the API server's field error
/// detail: `compilation failed: ERROR: <input>:1:4: Syntax error: ...`.
pub fn compile(expression: &str, decl: Declarations) -> Compiled {
    let key = (expression.to_owned(), decl);
    if let Ok(c) = cache().lock()
        && let Some(hit) = c.get(&key)
    {
        return hit.clone();
    }
    let compiled = compile_uncached(expression, decl);
    if let Ok(mut c) = cache().lock() {
        if c.len() >= CACHE_LIMIT {
            c.clear();
        }
        c.insert(key, compiled.clone());
    }
    compiled
}

fn compile_uncached(expression: &str, decl: Declarations) -> Compiled {
    let size = expression.chars().count();
    if size > MAX_EXPRESSION_LEN {
        return Err(format!(
            "compilation failed: expression code point size exceeds limit: size: {size}, limit {MAX_EXPRESSION_LEN}"
        ));
    }
    let program = env()
        .compile(expression)
        .map_err(|e| format!("compilation failed: {}", go_style(&e.to_string())))?;
    check_tree(&program, expression, decl).map_err(|e| format!("compilation failed: {e}"))?;
    Ok(Arc::new(program))
}

/// cel-go prints the source snippet of an error as ` | source` / ` | ..^`.
fn go_style(message: &str) -> String {
    message.replace("\n| ", "\n | ")
}

/// Names CEL itself resolves: types used as values (`type(x) == string`) and the namespaces of
/// the extension libraries Kubernetes installs.
const CEL_NAMES: &[&str] = &[
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
    "optional",
    "optional_type",
    "strings",
    "math",
    "sets",
    "lists",
    "base64",
    "format",
];

fn declared(name: &str, decl: Declarations) -> bool {
    match name {
        "object" | "oldObject" | "request" | "namespaceObject" | "variables" => true,
        "params" => decl.params,
        "authorizer" => decl.authorizer,
        other => CEL_NAMES.contains(&other) || other.starts_with('@'),
    }
}

/// The checks cel-go's type checker makes that matter here (every name declared) and the depth
/// limit, walking the tree without recursion.
fn check_tree(program: &Program, source: &str, decl: Declarations) -> Result<(), String> {
    // (node, depth, the comprehension variables in scope)
    let mut stack: Vec<(&IdedExpr, usize, Vec<&str>)> = vec![(program.expression(), 1, vec![])];
    while let Some((node, depth, scope)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(format!(
                "ERROR: <input>: expression nested more than {MAX_DEPTH} levels deep"
            ));
        }
        let next = depth + 1;
        match &node.expr {
            Expr::Ident(name) => {
                if !declared(name, decl) && !scope.contains(&name.as_str()) {
                    let offset = program
                        .source_info()
                        .offset_for(node.id)
                        .map_or(0, |(start, _)| start as usize);
                    return Err(undeclared(source, offset, name));
                }
            }
            Expr::Call(call) => {
                if let Some(target) = &call.target {
                    stack.push((target, next, scope.clone()));
                }
                for arg in &call.args {
                    stack.push((arg, next, scope.clone()));
                }
            }
            Expr::Comprehension(c) => {
                stack.push((&c.iter_range, next, scope.clone()));
                stack.push((&c.accu_init, next, scope.clone()));
                let mut inner = scope.clone();
                inner.push(&c.iter_var);
                if let Some(v2) = &c.iter_var2 {
                    inner.push(v2);
                }
                inner.push(&c.accu_var);
                for e in [&c.loop_cond, &c.loop_step, &c.result] {
                    stack.push((e, next, inner.clone()));
                }
            }
            Expr::List(list) => {
                for e in &list.elements {
                    stack.push((e, next, scope.clone()));
                }
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    push_entry(&mut stack, &entry.expr, next, &scope);
                }
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    push_entry(&mut stack, &entry.expr, next, &scope);
                }
            }
            Expr::Select(select) => stack.push((&select.operand, next, scope)),
            Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
    Ok(())
}

fn push_entry<'a>(
    stack: &mut Vec<(&'a IdedExpr, usize, Vec<&'a str>)>,
    entry: &'a EntryExpr,
    depth: usize,
    scope: &[&'a str],
) {
    match entry {
        EntryExpr::StructField(f) => stack.push((&f.value, depth, scope.to_vec())),
        EntryExpr::MapEntry(e) => {
            stack.push((&e.key, depth, scope.to_vec()));
            stack.push((&e.value, depth, scope.to_vec()));
        }
    }
}

/// cel-go's message: `ERROR: <input>:1:1: undeclared reference to 'x' (in container '')` and
/// the source line with a caret under the name.
fn undeclared(source: &str, offset: usize, name: &str) -> String {
    let before: Vec<char> = source.chars().take(offset).collect();
    let line = before.iter().filter(|c| **c == '\n').count() + 1;
    let column = before.iter().rev().take_while(|c| **c != '\n').count();
    let text = source.lines().nth(line - 1).unwrap_or_default();
    format!(
        "ERROR: <input>:{line}:{}: undeclared reference to '{name}' (in container '')\n | {text}\n | {}^",
        column + 1,
        ".".repeat(column)
    )
}

/// A JSON value as CEL sees an unstructured object: integers are `int` (`uint` only past
/// `i64::MAX`), other numbers `double`, objects maps with string keys.
pub fn to_cel(v: &Value) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(a) => Cel::List(Arc::new(a.iter().map(to_cel).collect())),
        Value::Object(o) => Cel::Map(CelMap {
            map: Arc::new(
                o.iter()
                    .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                    .collect(),
            ),
        }),
    }
}

/// A map of CEL values (for `variables`).
pub fn cel_map(entries: &[(String, Cel)]) -> Cel {
    Cel::Map(CelMap {
        map: Arc::new(
            entries
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), v.clone()))
                .collect(),
        ),
    })
}

/// Evaluates a compiled program with the given variables (call on the CEL thread). The error
/// reads like cel-go's (`no such key: x`).
pub fn evaluate(program: &Program, variables: &[(&str, &Cel)]) -> Result<Cel, String> {
    let mut context = Context::with_env(env());
    for (name, value) in variables {
        context.add_variable_from_value(*name, (*value).clone());
    }
    program
        .execute(&context)
        .map_err(|e| lower_first(&e.to_string()))
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Declarations = Declarations {
        params: true,
        authorizer: true,
    };

    fn run(expression: &str, object: Value) -> Result<Cel, String> {
        on_cel_thread(|| {
            let program = compile(expression, ALL)?;
            let object = to_cel(&object);
            evaluate(&program, &[("object", &object), ("oldObject", &Cel::Null)])
        })
        .unwrap_or_else(|| Err("no CEL thread".into()))
    }

    #[test]
    fn the_kubernetes_subset_evaluates() {
        let obj = serde_json::json!({
            "metadata": {"name": "csi-manila-gold", "labels": {"a": "b"}},
            "provisioner": "manila.csi.openstack.org",
            "parameters": {"type": "gold"},
            "list": [1, 2, 3]
        });
        for (expression, want) in [
            (
                "has(object.metadata.labels) && 'a' in object.metadata.labels",
                true,
            ),
            ("!has(object.metadata.annotations)", true),
            ("object.metadata.labels['a'] in ['b', 'c']", true),
            ("object.metadata.name.startsWith('csi-manila-')", true),
            ("object.provisioner == 'manila.csi.openstack.org'", true),
            ("oldObject == null || oldObject.provisioner == 'x'", true),
            ("size(object.list) == 3 && object.list.all(x, x > 0)", true),
            (
                "object.list.exists(x, x == 2) && !object.list.exists(x, x == 9)",
                true,
            ),
            ("['x', 'y'].join(', ') + '!' == 'x, y!'", true),
            (
                "object.parameters.type + '-' + object.metadata.name == 'gold-csi-manila-gold'",
                true,
            ),
            ("object.list.map(x, x * 2)[2] == 6", true),
        ] {
            assert_eq!(
                run(expression, obj.clone()),
                Ok(Cel::Bool(want)),
                "{expression}"
            );
        }
        assert_eq!(
            run("object.nope == 1", obj.clone()),
            Err("no such key: nope".into())
        );
    }

    #[test]
    fn compile_errors_read_like_cel_go() {
        let err = on_cel_thread(|| compile("objet.provisioner == 'x'", ALL).err()).flatten();
        assert_eq!(
            err.as_deref(),
            Some(
                "compilation failed: ERROR: <input>:1:1: undeclared reference to 'objet' (in container '')\n | objet.provisioner == 'x'\n | ^"
            )
        );
        let no_params = Declarations {
            params: false,
            authorizer: true,
        };
        let err = on_cel_thread(|| compile("params.x", no_params).err()).flatten();
        assert!(err.is_some_and(|e| e.contains("undeclared reference to 'params'")));
        let err = on_cel_thread(|| compile("1 +", ALL).err()).flatten();
        assert!(
            err.as_deref().is_some_and(
                |e| e.starts_with("compilation failed: ERROR: <input>:1:4: Syntax error:")
            ),
            "{err:?}"
        );
        // Comprehension variables are declared inside their macro only.
        assert!(on_cel_thread(|| compile("[1].all(x, x > 0)", ALL).is_ok()) == Some(true));
        let err = on_cel_thread(|| compile("[1].all(x, x > 0) && x", ALL).err()).flatten();
        assert!(err.is_some_and(|e| e.contains("undeclared reference to 'x'")));
    }

    #[test]
    fn hostile_expressions_are_errors_not_crashes() {
        for expression in [
            "(".repeat(5_000) + "1" + &")".repeat(5_000),
            "[".repeat(5_000) + &"]".repeat(5_000),
            "1".to_owned() + &"+1".repeat(4_900),
            "object".to_owned() + &"[0]".repeat(3_000),
            "size(".repeat(3_000) + "1" + &")".repeat(3_000),
            "'".to_owned() + &"x".repeat(20_000) + "'",
        ] {
            let got = on_cel_thread(|| compile(&expression, ALL).map(|_| ()));
            assert!(
                matches!(got, Some(Err(_))),
                "{}…: {got:?}",
                &expression.chars().take(20).collect::<String>()
            );
        }
        // Whatever these compile to, the thread comes back.
        for expression in ["!".repeat(9_001) + "true", "\u{0}\u{7f}\u{ffff}".into()] {
            assert!(on_cel_thread(|| compile(&expression, ALL).map(|_| ())).is_some());
        }
    }
}
