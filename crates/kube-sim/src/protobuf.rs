//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`), decoded into the JSON
//! object kube-sim stores.
//!
//! client-go's typed clients, and kubectl since v1.30 for its generator commands (`kubectl
//! create configmap|secret|deployment|namespace|...`), send built-in objects as protobuf: the
//! magic `k8s\0`, then a `runtime.Unknown` envelope (`typeMeta` 1 with `apiVersion` 1 and
//! `kind` 2, `raw` 2 holding the object's own message, `contentEncoding` 3, `contentType` 4).
//! The API server decodes that into its Go struct and, when it answers in JSON, encodes the
//! struct with `json.Marshal`; this module goes from the bytes to that JSON directly.
//!
//! It is a small generic decoder driven by a table, `protobuf/schema.txt`, rather than
//! generated code: the field numbers, JSON names and Go shapes of every message reachable from
//! the built-in kinds kube-sim serves, as the v1.33 Go structs declare them (the format is
//! described at the top of the table). Generated bindings (the `k8s-pb` crate with `prost`)
//! were measured at ~37 s of extra clean build on a 2-core machine and would still need a
//! hand-written conversion to JSON for every type, since what JSON a field becomes depends on
//! whether the Go field is a pointer and `omitempty`, which the protobuf messages do not say
//! (a non-pointer `int32` is always on the wire, a `*int32` only when set, zero or not).
//!
//! Decoding follows the Go decoder: unknown field numbers are skipped (a real server drops
//! fields it does not know, protobuf has no strict mode), the last occurrence of a singular
//! field wins, repeated scalars are read packed or not; `Time` keeps whole seconds and
//! `MicroTime` microseconds, as apimachinery's do. Malformed bytes (truncated, a wrong wire
//! type for a known field, an over-long varint, a group, invalid JSON inside a
//! `RawExtension`) are `400 BadRequest`; a kind the table does not describe (a
//! CustomResourceDefinition, any kind kube-sim does not serve) is `415 UnsupportedMediaType`
//! naming the kinds it can decode. Nothing here panics on input: every read is bounds-checked
//! and nesting is capped.
//!
//! Responses are never protobuf: kube-sim answers JSON, which clients accept because they list
//! `application/json` after protobuf in `Accept` (client-go and kubectl always do).

use std::collections::HashMap;
use std::sync::OnceLock;

use base64::Engine;
use serde_json::{Map, Number, Value};

use crate::errors::ApiError;

/// The media type of Kubernetes protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// What every protobuf-encoded object starts with.
const MAGIC: &[u8] = b"k8s\0";
/// The message table; see its header.
const TABLE: &str = include_str!("protobuf/schema.txt");
/// Deeper nesting than any built-in object has (a Pod's is about 10) is refused.
const MAX_DEPTH: usize = 64;
/// `time.Time{}.Unix()`: Go's zero time, which JSON renders as `null`.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// Whether a `Content-Type` names Kubernetes protobuf.
pub fn is_protobuf(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|ct| ct.trim().eq_ignore_ascii_case(MEDIA_TYPE))
}

/// Decodes a protobuf body into the JSON object the API server would produce from it.
/// `default_api_version` and `default_kind` (the endpoint's) fill in an envelope that leaves
/// them empty, as the server's decoder does.
pub fn decode(
    body: &[u8],
    default_api_version: &str,
    default_kind: &str,
) -> Result<Value, ApiError> {
    let schema = schema()?;
    let rest = body.strip_prefix(MAGIC).ok_or_else(|| {
        ApiError::bad_request(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
        )
    })?;
    let envelope = Envelope::read(rest).map_err(malformed)?;
    let api_version = if envelope.api_version.is_empty() {
        default_api_version.to_string()
    } else {
        envelope.api_version
    };
    let kind = if envelope.kind.is_empty() {
        default_kind.to_string()
    } else {
        envelope.kind
    };
    let Some(index) = schema.root(&api_version, &kind) else {
        return Err(ApiError::unsupported_protobuf_kind(
            &api_version,
            &kind,
            &schema.kind_list(),
        ));
    };
    let mut object = Map::new();
    object.insert("apiVersion".into(), Value::String(api_version));
    object.insert("kind".into(), Value::String(kind));
    let decoded = Decoder { schema }
        .message(index, envelope.raw, 0)
        .map_err(malformed)?;
    object.extend(decoded);
    Ok(Value::Object(object))
}

fn malformed(detail: String) -> ApiError {
    ApiError::bad_request(format!("unable to decode the protobuf body: {detail}"))
}

fn schema() -> Result<&'static Schema, ApiError> {
    static SCHEMA: OnceLock<Result<Schema, String>> = OnceLock::new();
    SCHEMA
        .get_or_init(|| Schema::parse(TABLE))
        .as_ref()
        .map_err(|e| ApiError::internal(format!("kube-sim's protobuf table is broken: {e}")))
}

// ----- the table ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    String,
    Int32,
    Int64,
    Bool,
    Bytes,
    Double,
    /// `metav1.Time`: a `Timestamp` (seconds 1, nanos 2), RFC 3339 in JSON, whole seconds.
    Time,
    /// `metav1.MicroTime`: the same with microseconds.
    MicroTime,
    /// `resource.Quantity`: its string (field 1).
    Quantity,
    /// `intstr.IntOrString`: type 1 (0 int, 1 string), intVal 2, strVal 3.
    IntOrString,
    /// `runtime.RawExtension`: JSON bytes (field 1) embedded as they are.
    RawExtension,
    /// `metav1.FieldsV1`: the managed-fields JSON (field 1) embedded as it is.
    FieldsV1,
    /// A named `[]string` type encoded as a message (`items` 1), e.g. `ExtraValue`.
    StringList,
    /// A message of the table, by index.
    Message(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A non-pointer field: always in the Go struct.
    Value,
    /// A pointer: present only when set.
    Pointer,
    Slice,
    Map,
}

#[derive(Debug)]
struct Field {
    number: u32,
    json: String,
    ty: Ty,
    shape: Shape,
    omitempty: bool,
    inline: bool,
}

#[derive(Debug)]
struct Message {
    name: String,
    /// Sorted by number.
    fields: Vec<Field>,
}

#[derive(Debug)]
struct Schema {
    messages: Vec<Message>,
    /// (apiVersion, kind) → message.
    kinds: HashMap<(String, String), usize>,
}

impl Schema {
    fn parse(text: &str) -> Result<Self, String> {
        let lines: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .collect();
        // First the message names, so fields can refer to messages defined later.
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut messages = Vec::new();
        let mut kinds = HashMap::new();
        for (n, line) in &lines {
            if line.starts_with(' ') {
                continue;
            }
            let (name, kind) = match line.split_once(" = ") {
                Some((name, kind)) => (name.trim(), Some(kind)),
                None => (line.trim(), None),
            };
            if index.insert(name, messages.len()).is_some() {
                return Err(format!("line {}: {name} is defined twice", n + 1));
            }
            if let Some(kind) = kind {
                let (api_version, kind) = kind
                    .split_once(' ')
                    .ok_or_else(|| format!("line {}: expected `= apiVersion Kind`", n + 1))?;
                kinds.insert((api_version.to_string(), kind.to_string()), messages.len());
            }
            messages.push(Message {
                name: name.to_string(),
                fields: Vec::new(),
            });
        }
        let mut current: Option<usize> = None;
        for (n, line) in &lines {
            if !line.starts_with(' ') {
                current = Some(current.map_or(0, |c| c + 1));
                continue;
            }
            let at = current.ok_or_else(|| format!("line {}: a field outside a message", n + 1))?;
            let field = parse_field(line, &index).map_err(|e| format!("line {}: {e}", n + 1))?;
            let fields = &mut messages[at].fields;
            if fields.iter().any(|f| f.number == field.number) {
                return Err(format!("line {}: field {} repeated", n + 1, field.number));
            }
            fields.push(field);
        }
        for m in &mut messages {
            m.fields.sort_by_key(|f| f.number);
        }
        Ok(Self { messages, kinds })
    }

    fn root(&self, api_version: &str, kind: &str) -> Option<usize> {
        if kind == "DeleteOptions" {
            // client-go sends DeleteOptions under the group version of the resource deleted.
            return self
                .kinds
                .get(&("meta.k8s.io/v1".to_string(), kind.to_string()))
                .copied();
        }
        self.kinds
            .get(&(api_version.to_string(), kind.to_string()))
            .copied()
    }

    /// `v1 ConfigMap, apps/v1 Deployment, ...` in a stable order.
    fn kind_list(&self) -> String {
        let mut kinds: Vec<String> = self
            .kinds
            .keys()
            .map(|(gv, kind)| format!("{gv} {kind}"))
            .collect();
        kinds.sort();
        kinds.join(", ")
    }
}

fn parse_field(line: &str, index: &HashMap<&str, usize>) -> Result<Field, String> {
    let mut words = line.split_whitespace();
    let (Some(number), Some(json), Some(ty)) = (words.next(), words.next(), words.next()) else {
        return Err("expected `number jsonName type [flags]`".into());
    };
    let number: u32 = number
        .parse()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("bad field number {number:?}"))?;
    let mut omitempty = false;
    let mut inline = false;
    for flag in words {
        match flag {
            "omitempty" => omitempty = true,
            "inline" => inline = true,
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    let (shape, element) = if let Some(t) = ty.strip_prefix('*') {
        (Shape::Pointer, t)
    } else if let Some(t) = ty.strip_prefix("[]") {
        (Shape::Slice, t)
    } else if let Some(t) = ty.strip_prefix("map[string]") {
        (Shape::Map, t)
    } else {
        (Shape::Value, ty)
    };
    let ty = match element {
        "string" => Ty::String,
        "int32" => Ty::Int32,
        "int64" => Ty::Int64,
        "bool" => Ty::Bool,
        "bytes" => Ty::Bytes,
        "double" => Ty::Double,
        "Time" => Ty::Time,
        "MicroTime" => Ty::MicroTime,
        "Quantity" => Ty::Quantity,
        "IntOrString" => Ty::IntOrString,
        "RawExtension" => Ty::RawExtension,
        "FieldsV1" => Ty::FieldsV1,
        "StringList" => Ty::StringList,
        name => Ty::Message(
            *index
                .get(name)
                .ok_or_else(|| format!("unknown message {name}"))?,
        ),
    };
    if inline && !(shape == Shape::Value && matches!(ty, Ty::Message(_))) {
        return Err("only a non-pointer message can be inline".into());
    }
    Ok(Field {
        number,
        json: json.to_string(),
        ty,
        shape,
        omitempty,
        inline,
    })
}

// ----- the wire format ---------------------------------------------------------------------

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err("unexpected EOF".into());
            };
            self.pos += 1;
            if shift == 63 && b > 1 {
                return Err("integer overflow".into());
            }
            value |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err("integer overflow".into())
    }

    /// A field key: (number, wire type).
    fn key(&mut self) -> Result<(u32, u8), String> {
        let key = self.varint()?;
        let wire = (key & 7) as u8;
        let number = key >> 3;
        if number == 0 || number > u64::from(u32::MAX >> 3) {
            return Err(format!("illegal tag {number} (wire type {wire})"));
        }
        Ok((number as u32, wire))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|end| *end <= self.buf.len())
            .ok_or("unexpected EOF")?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| "invalid length".to_string())?;
        self.take(n)
    }

    fn fixed64(&mut self) -> Result<u64, String> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn skip(&mut self, wire: u8) -> Result<(), String> {
        match wire {
            VARINT => self.varint().map(drop),
            FIXED64 => self.take(8).map(drop),
            LEN => self.bytes().map(drop),
            FIXED32 => self.take(4).map(drop),
            3 | 4 => Err("groups are not supported".into()),
            w => Err(format!("illegal wire type {w}")),
        }
    }
}

/// `runtime.Unknown` with its `TypeMeta`.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

impl<'a> Envelope<'a> {
    fn read(buf: &'a [u8]) -> Result<Self, String> {
        let mut out = Envelope {
            api_version: String::new(),
            kind: String::new(),
            raw: &[],
        };
        let mut r = Reader::new(buf);
        while !r.done() {
            match r.key()? {
                (1, LEN) => {
                    let mut tm = Reader::new(r.bytes()?);
                    while !tm.done() {
                        match tm.key()? {
                            (1, LEN) => out.api_version = lossy(tm.bytes()?),
                            (2, LEN) => out.kind = lossy(tm.bytes()?),
                            (_, w) => tm.skip(w)?,
                        }
                    }
                }
                (2, LEN) => out.raw = r.bytes()?,
                (n @ 1..=4, w) if w != LEN => {
                    return Err(format!("wrong wire type {w} for field {n} of Unknown"));
                }
                (_, w) => r.skip(w)?,
            }
        }
        Ok(out)
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ----- decoding to JSON --------------------------------------------------------------------

/// What was read for one field of a message.
enum Slot {
    Absent,
    One(Value),
    Many(Vec<Value>),
    Entries(Map<String, Value>),
}

struct Decoder<'s> {
    schema: &'s Schema,
}

impl Decoder<'_> {
    /// Decodes message `index` from `buf` into its JSON fields.
    fn message(
        &self,
        index: usize,
        buf: &[u8],
        depth: usize,
    ) -> Result<Map<String, Value>, String> {
        if depth > MAX_DEPTH {
            return Err("the object is nested too deeply".into());
        }
        let message = &self.schema.messages[index];
        let mut slots: Vec<Slot> = message.fields.iter().map(|_| Slot::Absent).collect();
        let mut r = Reader::new(buf);
        while !r.done() {
            let (number, wire) = r.key()?;
            let Ok(at) = message.fields.binary_search_by_key(&number, |f| f.number) else {
                r.skip(wire)?;
                continue;
            };
            let field = &message.fields[at];
            let context = || format!("{}.{}", short(&message.name), field.json);
            match field.shape {
                Shape::Value | Shape::Pointer => {
                    let v = self
                        .value(field.ty, wire, &mut r, depth)
                        .map_err(|e| format!("{}: {e}", context()))?;
                    slots[at] = Slot::One(v);
                }
                Shape::Slice => {
                    let mut items = match std::mem::replace(&mut slots[at], Slot::Absent) {
                        Slot::Many(items) => items,
                        _ => Vec::new(),
                    };
                    if wire == LEN && packable(field.ty) {
                        let mut packed = Reader::new(r.bytes()?);
                        while !packed.done() {
                            let wire = if field.ty == Ty::Double {
                                FIXED64
                            } else {
                                VARINT
                            };
                            items.push(
                                self.value(field.ty, wire, &mut packed, depth)
                                    .map_err(|e| format!("{}: {e}", context()))?,
                            );
                        }
                    } else {
                        items.push(
                            self.value(field.ty, wire, &mut r, depth)
                                .map_err(|e| format!("{}: {e}", context()))?,
                        );
                    }
                    slots[at] = Slot::Many(items);
                }
                Shape::Map => {
                    let mut entries = match std::mem::replace(&mut slots[at], Slot::Absent) {
                        Slot::Entries(entries) => entries,
                        _ => Map::new(),
                    };
                    if wire != LEN {
                        return Err(format!("{}: wrong wire type {wire} for a map", context()));
                    }
                    let (k, v) = self
                        .entry(field.ty, r.bytes()?, depth)
                        .map_err(|e| format!("{}: {e}", context()))?;
                    entries.insert(k, v);
                    slots[at] = Slot::Entries(entries);
                }
            }
        }
        let mut out = Map::new();
        for (field, slot) in message.fields.iter().zip(slots) {
            if field.inline {
                let inner = match slot {
                    Slot::One(Value::Object(inner)) => inner,
                    _ => self.zero_message(field.ty, depth)?,
                };
                out.extend(inner);
                continue;
            }
            let value = match (field.shape, slot) {
                (Shape::Value, Slot::One(v)) if field.omitempty && is_zero(&v) => continue,
                (Shape::Value | Shape::Pointer, Slot::One(v)) => v,
                (Shape::Value, _) if field.omitempty => continue,
                (Shape::Value, _) => self.zero(field.ty, depth)?,
                (Shape::Slice, Slot::Many(items)) if !items.is_empty() => Value::Array(items),
                (Shape::Map, Slot::Entries(entries)) if !entries.is_empty() => {
                    Value::Object(entries)
                }
                _ => continue,
            };
            out.insert(field.json.clone(), value);
        }
        Ok(out)
    }

    /// One map entry: key 1 (a string), value 2.
    fn entry(&self, ty: Ty, buf: &[u8], depth: usize) -> Result<(String, Value), String> {
        let mut key = String::new();
        let mut value = None;
        let mut r = Reader::new(buf);
        while !r.done() {
            match r.key()? {
                (1, LEN) => key = lossy(r.bytes()?),
                (1, w) => return Err(format!("wrong wire type {w} for a map key")),
                (2, w) => value = Some(self.value(ty, w, &mut r, depth)?),
                (_, w) => r.skip(w)?,
            }
        }
        let value = match value {
            Some(v) => v,
            None => self.zero(ty, depth)?,
        };
        Ok((key, value))
    }

    /// One value of type `ty` read with wire type `wire`.
    fn value(&self, ty: Ty, wire: u8, r: &mut Reader<'_>, depth: usize) -> Result<Value, String> {
        let expected = match ty {
            Ty::Int32 | Ty::Int64 | Ty::Bool => VARINT,
            Ty::Double => FIXED64,
            _ => LEN,
        };
        if wire != expected {
            return Err(format!("wrong wire type {wire} (expected {expected})"));
        }
        Ok(match ty {
            // Go truncates to the field's width, as `int32(v)` does.
            Ty::Int32 => Value::from(r.varint()? as i32),
            Ty::Int64 => Value::from(r.varint()? as i64),
            Ty::Bool => Value::Bool(r.varint()? != 0),
            Ty::Double => {
                let f = f64::from_bits(r.fixed64()?);
                Value::Number(Number::from_f64(f).ok_or("a float that JSON cannot hold")?)
            }
            Ty::String => Value::String(lossy(r.bytes()?)),
            Ty::Bytes => {
                Value::String(base64::engine::general_purpose::STANDARD.encode(r.bytes()?))
            }
            Ty::Time => time(r.bytes()?, false)?,
            Ty::MicroTime => time(r.bytes()?, true)?,
            Ty::Quantity => {
                let s = single_string(r.bytes()?, 1)?;
                Value::String(if s.is_empty() { "0".into() } else { s })
            }
            Ty::IntOrString => int_or_string(r.bytes()?)?,
            Ty::RawExtension | Ty::FieldsV1 => raw_json(r.bytes()?)?,
            Ty::StringList => {
                let mut items = Vec::new();
                let mut inner = Reader::new(r.bytes()?);
                while !inner.done() {
                    match inner.key()? {
                        (1, LEN) => items.push(Value::String(lossy(inner.bytes()?))),
                        (_, w) => inner.skip(w)?,
                    }
                }
                Value::Array(items)
            }
            Ty::Message(index) => Value::Object(self.message(index, r.bytes()?, depth + 1)?),
        })
    }

    /// What a non-pointer Go field that was not on the wire looks like in JSON.
    fn zero(&self, ty: Ty, depth: usize) -> Result<Value, String> {
        Ok(match ty {
            Ty::String => Value::String(String::new()),
            Ty::Int32 | Ty::Int64 | Ty::IntOrString => Value::from(0),
            Ty::Double => Value::from(0.0),
            Ty::Bool => Value::Bool(false),
            Ty::Quantity => Value::String("0".into()),
            Ty::Bytes | Ty::Time | Ty::MicroTime | Ty::RawExtension | Ty::FieldsV1 => Value::Null,
            Ty::StringList => Value::Null,
            Ty::Message(_) => Value::Object(self.zero_message(ty, depth)?),
        })
    }

    fn zero_message(&self, ty: Ty, depth: usize) -> Result<Map<String, Value>, String> {
        match ty {
            Ty::Message(index) => self.message(index, &[], depth + 1),
            _ => Ok(Map::new()),
        }
    }
}

/// Whether Go's `omitempty` leaves this scalar out.
fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Bool(b) => !b,
        Value::Null => true,
        _ => false,
    }
}

fn packable(ty: Ty) -> bool {
    matches!(ty, Ty::Int32 | Ty::Int64 | Ty::Bool | Ty::Double)
}

/// `apps.v1.Deployment` → `Deployment`, for messages.
fn short(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// A message whose only field of interest is string field `number`.
fn single_string(buf: &[u8], number: u32) -> Result<String, String> {
    let mut out = String::new();
    let mut r = Reader::new(buf);
    while !r.done() {
        match r.key()? {
            (n, LEN) if n == number => out = lossy(r.bytes()?),
            (n, w) if n == number => return Err(format!("wrong wire type {w}")),
            (_, w) => r.skip(w)?,
        }
    }
    Ok(out)
}

fn int_or_string(buf: &[u8]) -> Result<Value, String> {
    let (mut kind, mut int, mut string) = (0i64, 0i32, String::new());
    let mut r = Reader::new(buf);
    while !r.done() {
        match r.key()? {
            (1, VARINT) => kind = r.varint()? as i64,
            (2, VARINT) => int = r.varint()? as i32,
            (3, LEN) => string = lossy(r.bytes()?),
            (n @ 1..=3, w) => return Err(format!("wrong wire type {w} for IntOrString field {n}")),
            (_, w) => r.skip(w)?,
        }
    }
    Ok(if kind == 1 {
        Value::String(string)
    } else {
        Value::from(int)
    })
}

/// `RawExtension` and `FieldsV1`: JSON carried as bytes in field 1.
fn raw_json(buf: &[u8]) -> Result<Value, String> {
    let mut raw: &[u8] = &[];
    let mut r = Reader::new(buf);
    while !r.done() {
        match r.key()? {
            (1, LEN) => raw = r.bytes()?,
            (1, w) => return Err(format!("wrong wire type {w}")),
            (_, w) => r.skip(w)?,
        }
    }
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(raw).map_err(|e| format!("embedded JSON: {e}"))
}

/// A `Timestamp` as `metav1.Time` (whole seconds) or `MicroTime` renders it in JSON.
fn time(buf: &[u8], micro: bool) -> Result<Value, String> {
    if buf.is_empty() {
        return Ok(Value::Null);
    }
    let (mut seconds, mut nanos) = (0i64, 0i64);
    let mut r = Reader::new(buf);
    while !r.done() {
        match r.key()? {
            (1, VARINT) => seconds = r.varint()? as i64,
            (2, VARINT) => nanos = i64::from(r.varint()? as i32),
            (n @ 1..=2, w) => return Err(format!("wrong wire type {w} for Timestamp field {n}")),
            (_, w) => r.skip(w)?,
        }
    }
    // Time drops the nanoseconds; MicroTime truncates them to microseconds.
    let nanos = if micro { nanos - nanos % 1000 } else { 0 };
    let seconds = seconds
        .checked_add(nanos.div_euclid(1_000_000_000))
        .ok_or("time out of range")?;
    let nanos = nanos.rem_euclid(1_000_000_000);
    if seconds == GO_ZERO_TIME_SECONDS && nanos == 0 {
        return Ok(Value::Null);
    }
    let out_of_range = || "Time.MarshalJSON: year outside of range [0,9999]".to_string();
    let ts = jiff::Timestamp::new(seconds, nanos as i32).map_err(|_| out_of_range())?;
    let dt = ts.to_zoned(jiff::tz::TimeZone::UTC).datetime();
    if !(0..=9999).contains(&dt.year()) {
        return Err(out_of_range());
    }
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    );
    if micro {
        s.push_str(&format!(".{:06}", nanos / 1000));
    }
    s.push('Z');
    Ok(Value::String(s))
}

#[cfg(test)]
mod tests;
