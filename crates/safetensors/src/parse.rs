//! The sans-IO safetensors header reader. It takes the first bytes of a file, however many the
//! caller has, and either returns the header or says exactly how many bytes it needs
//! ([`ParseError::Truncated`]), so a page or a Hub client reads 8 bytes, then the header, and
//! never the gigabytes after it.
//!
//! Layout (huggingface/safetensors `README.md` "Format", and `SafeTensors::read_metadata` in
//! `safetensors/src/tensor.rs` @ `24b0b2857fef49be734b9ab72ce97c09bb25f5b9`): a little-endian `u64`
//! header length N (at most [`MAX_HEADER_BYTES`]), then N bytes of UTF-8 JSON (whitespace before
//! or after the object is allowed: writers pad it), then the data. The JSON is an object mapping
//! each tensor's name to `{"dtype": "BF16", "shape": [..], "data_offsets": [start, end]}`, plus
//! an optional `__metadata__` object of strings. Unknown fields in a tensor's entry are ignored,
//! as the reference's serde derive ignores them.
//!
//! The JSON is read by serde_json's streaming deserializer into the header's own types, so memory
//! stays a small multiple of the header's bytes (no value tree), nesting is bounded by
//! serde_json's recursion limit, and each wrong value becomes a typed error naming its tensor.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::dtype::Dtype;
use crate::error::{ParseError, HEADER_LENGTH_BYTES, MAX_HEADER_BYTES, METADATA_KEY};
use crate::header::{Header, TensorInfo};

/// Reads a safetensors header from the start of a file. `prefix` may hold the whole file or any
/// prefix of it; bytes after the header are not looked at. With fewer than 8 bytes, or fewer
/// than 8 + the length those declare, it returns [`ParseError::Truncated`] with the exact total.
pub fn parse_header(prefix: &[u8]) -> Result<Header, ParseError> {
    let truncated = |needed| ParseError::Truncated { needed };
    let length: [u8; 8] = prefix
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or(truncated(HEADER_LENGTH_BYTES))?;
    let declared = u64::from_le_bytes(length);
    if declared > MAX_HEADER_BYTES {
        return Err(ParseError::HeaderTooLarge { declared });
    }
    // At most 100,000,008: no overflow, and it fits a 32-bit usize.
    let data_start = HEADER_LENGTH_BYTES + declared;
    let json = usize::try_from(data_start)
        .ok()
        .and_then(|end| prefix.get(8..end))
        .ok_or(truncated(data_start))?;
    let text = std::str::from_utf8(json).map_err(|e| ParseError::InvalidUtf8 {
        at: HEADER_LENGTH_BYTES + e.valid_up_to() as u64,
    })?;
    let (mut tensors, metadata) = read_json(text)?;
    check_unique(tensors.iter().map(|t| t.name.as_str()))?;
    check_unique(metadata.iter().map(|(k, _)| k.as_str()))?;
    // The reference sorts by offsets before validating: the object's order means nothing. The
    // sort is stable, so tensors of no bytes at one offset keep the header's order.
    tensors.sort_by_key(|t| t.data_offsets);
    validate(&tensors, data_start)?;
    Ok(Header {
        tensors,
        metadata,
        data_start,
    })
}

/// `Metadata::validate`: the tensors, in offset order, cover the data from 0 with no gap or
/// overlap, and each spans exactly the bytes its shape and dtype take. Plus: the file's end fits
/// in 64 bits.
fn validate(tensors: &[TensorInfo], data_start: u64) -> Result<(), ParseError> {
    let mut end = 0u64;
    for t in tensors {
        let (start, stop) = t.data_offsets;
        if start != end || stop < start {
            return Err(ParseError::MisplacedTensor {
                tensor: t.name.clone(),
                data_offsets: t.data_offsets,
                expected_start: end,
            });
        }
        end = stop;
        let too_large = || ParseError::TooLarge {
            tensor: t.name.clone(),
        };
        let elements = t.elements().ok_or_else(too_large)?;
        let bits = elements.checked_mul(t.dtype.bits()).ok_or_else(too_large)?;
        if !bits.is_multiple_of(8) {
            return Err(ParseError::NotWholeBytes {
                tensor: t.name.clone(),
                dtype: t.dtype,
                elements,
            });
        }
        if stop - start != bits / 8 {
            return Err(ParseError::SizeMismatch {
                tensor: t.name.clone(),
                dtype: t.dtype,
                shape: t.shape.clone(),
                span: stop - start,
                expected: bits / 8,
            });
        }
    }
    match tensors.last() {
        Some(last) if data_start.checked_add(end).is_none() => Err(ParseError::TooLarge {
            tensor: last.name.clone(),
        }),
        _ => Ok(()),
    }
}

/// The first name given twice, in header order.
fn check_unique<'a>(names: impl Iterator<Item = &'a str>) -> Result<(), ParseError> {
    let mut seen = BTreeSet::new();
    for name in names {
        if !seen.insert(name) {
            return Err(ParseError::DuplicateKey { key: name.into() });
        }
    }
    Ok(())
}

type Tensors = Vec<TensorInfo>;
type Metadata = Vec<(String, String)>;

/// The header's JSON as tensors (in header order) and metadata.
fn read_json(text: &str) -> Result<(Tensors, Metadata), ParseError> {
    let mut problem = None;
    let mut de = serde_json::Deserializer::from_str(text);
    let read = Expect(Top {
        problem: &mut problem,
    })
    .deserialize(&mut de)
    .and_then(|got| de.end().map(|()| got));
    // A typed problem stopped the reading: it is the error, not serde_json's stand-in.
    if let Some(problem) = problem {
        return Err(problem);
    }
    match read {
        Ok(Got::Is(parsed)) => Ok(parsed),
        Ok(Got::Not(found)) => Err(ParseError::NotAnObject { found }),
        Err(e) => Err(ParseError::InvalidJson {
            message: e.to_string(),
        }),
    }
}

/// Records `problem` and stops the reading.
fn fail<T, E: de::Error>(slot: &mut Option<ParseError>, problem: ParseError) -> Result<T, E> {
    *slot = Some(problem);
    Err(E::custom("stopped at a typed problem"))
}

/// A JSON value as the kind wanted, or a description of what was there instead.
enum Got<T> {
    Is(T),
    Not(String),
}

/// What a value should be. Each method is called for one kind of JSON value; the defaults say the
/// kind is wrong (consuming a wrong array or object whole, as serde_json requires).
trait Want<'de>: Sized {
    type Out;

    fn whole(self, v: u64) -> Got<Self::Out> {
        Got::Not(format!("the number {v}"))
    }

    fn string(self, _v: &str) -> Got<Self::Out> {
        Got::Not("a string".into())
    }

    fn null(self) -> Got<Self::Out> {
        Got::Not("null".into())
    }

    fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Got<Self::Out>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Got::Not("an array".into()))
    }

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Got<Self::Out>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Got::Not("an object".into()))
    }
}

/// Reads any JSON value and hands it to the [`Want`].
struct Expect<W>(W);

impl<'de, W: Want<'de>> DeserializeSeed<'de> for Expect<W> {
    type Value = Got<W::Out>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, W: Want<'de>> Visitor<'de> for Expect<W> {
    type Value = Got<W::Out>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Got::Not(format!("{v}")))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(match u64::try_from(v) {
            Ok(v) => self.0.whole(v),
            Err(_) => Got::Not(format!("the negative number {v}")),
        })
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(self.0.whole(v))
    }

    fn visit_f64<E>(self, _v: f64) -> Result<Self::Value, E> {
        Ok(Got::Not(
            "a number with a fraction or an exponent, or past 2^64 - 1".into(),
        ))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.string(v))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(self.0.null())
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(self.0.null())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.map(map)
    }
}

/// The header: an object of tensors and `__metadata__`.
struct Top<'p> {
    problem: &'p mut Option<ParseError>,
}

impl<'de> Want<'de> for Top<'_> {
    type Out = (Tensors, Metadata);

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Got<Self::Out>, A::Error> {
        let mut tensors = Vec::new();
        let mut metadata = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == METADATA_KEY {
                if metadata.is_some() {
                    return fail(self.problem, ParseError::DuplicateKey { key });
                }
                match map.next_value_seed(Expect(Strings {
                    problem: &mut *self.problem,
                }))? {
                    Got::Is(entries) => metadata = Some(entries),
                    Got::Not(found) => {
                        let problem = ParseError::MetadataNotStrings { key: None, found };
                        return fail(self.problem, problem);
                    }
                }
                continue;
            }
            let entry = Tensor {
                name: &key,
                problem: &mut *self.problem,
            };
            match map.next_value_seed(Expect(entry))? {
                Got::Is((dtype, shape, data_offsets)) => tensors.push(TensorInfo {
                    name: key,
                    dtype,
                    shape,
                    data_offsets,
                }),
                Got::Not(found) => {
                    let problem = ParseError::NotATensor { tensor: key, found };
                    return fail(self.problem, problem);
                }
            }
        }
        Ok(Got::Is((tensors, metadata.unwrap_or_default())))
    }
}

/// `__metadata__`: an object of strings, or `null` (the reference's `Option`).
struct Strings<'p> {
    problem: &'p mut Option<ParseError>,
}

impl<'de> Want<'de> for Strings<'_> {
    type Out = Metadata;

    fn null(self) -> Got<Metadata> {
        Got::Is(Vec::new())
    }

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Got<Metadata>, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            match map.next_value_seed(Expect(Text))? {
                Got::Is(value) => entries.push((key, value)),
                Got::Not(found) => {
                    let problem = ParseError::MetadataNotStrings {
                        key: Some(key),
                        found,
                    };
                    return fail(self.problem, problem);
                }
            }
        }
        Ok(Got::Is(entries))
    }
}

/// One tensor's entry: `dtype`, `shape` and `data_offsets`, other fields ignored.
struct Tensor<'a, 'p> {
    name: &'a str,
    problem: &'p mut Option<ParseError>,
}

impl<'de> Want<'de> for Tensor<'_, '_> {
    type Out = (Dtype, Vec<u64>, (u64, u64));

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Got<Self::Out>, A::Error> {
        let tensor = || self.name.to_string();
        let mut dtype = None;
        let mut shape = None;
        let mut offsets = None;
        while let Some(key) = map.next_key::<String>()? {
            let field: &'static str = match key.as_str() {
                "dtype" => "dtype",
                "shape" => "shape",
                "data_offsets" => "data_offsets",
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            let seen = match field {
                "dtype" => dtype.is_some(),
                "shape" => shape.is_some(),
                _ => offsets.is_some(),
            };
            if seen {
                let problem = ParseError::DuplicateField {
                    tensor: tensor(),
                    field,
                };
                return fail(self.problem, problem);
            }
            let found = match field {
                "dtype" => match map.next_value_seed(Expect(Text))? {
                    Got::Is(name) => match Dtype::from_name(&name) {
                        Some(d) => {
                            dtype = Some(d);
                            continue;
                        }
                        None => {
                            let problem = ParseError::UnknownDtype {
                                tensor: tensor(),
                                dtype: name,
                            };
                            return fail(self.problem, problem);
                        }
                    },
                    Got::Not(found) => found,
                },
                "shape" => match map.next_value_seed(Expect(Shape))? {
                    Got::Is(dims) => {
                        shape = Some(dims);
                        continue;
                    }
                    Got::Not(found) => found,
                },
                _ => match map.next_value_seed(Expect(Offsets))? {
                    Got::Is(pair) => {
                        offsets = Some(pair);
                        continue;
                    }
                    Got::Not(found) => found,
                },
            };
            let problem = ParseError::BadField {
                tensor: tensor(),
                field,
                found,
            };
            return fail(self.problem, problem);
        }
        let missing = |field| ParseError::MissingField {
            tensor: tensor(),
            field,
        };
        match (dtype, shape, offsets) {
            (Some(d), Some(s), Some(o)) => Ok(Got::Is((d, s, o))),
            (None, _, _) => fail(self.problem, missing("dtype")),
            (_, None, _) => fail(self.problem, missing("shape")),
            (_, _, None) => fail(self.problem, missing("data_offsets")),
        }
    }
}

/// A string.
struct Text;

impl Want<'_> for Text {
    type Out = String;

    fn string(self, v: &str) -> Got<String> {
        Got::Is(v.to_string())
    }
}

/// A whole number below 2^64.
struct Whole;

impl Want<'_> for Whole {
    type Out = u64;

    fn whole(self, v: u64) -> Got<u64> {
        Got::Is(v)
    }
}

/// Consumes the rest of an array, counting its elements.
fn drain<'de, A: SeqAccess<'de>>(seq: &mut A) -> Result<u64, A::Error> {
    let mut n = 0u64;
    while seq.next_element::<IgnoredAny>()?.is_some() {
        n = n.saturating_add(1);
    }
    Ok(n)
}

/// `shape`: an array of whole numbers.
struct Shape;

impl<'de> Want<'de> for Shape {
    type Out = Vec<u64>;

    fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Got<Vec<u64>>, A::Error> {
        let mut dims = Vec::new();
        while let Some(got) = seq.next_element_seed(Expect(Whole))? {
            match got {
                Got::Is(d) => dims.push(d),
                Got::Not(found) => {
                    drain(&mut seq)?;
                    return Ok(Got::Not(format!("an array holding {found}")));
                }
            }
        }
        Ok(Got::Is(dims))
    }
}

/// `data_offsets`: an array of two whole numbers.
struct Offsets;

impl<'de> Want<'de> for Offsets {
    type Out = (u64, u64);

    fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Got<(u64, u64)>, A::Error> {
        let mut pair = [0u64; 2];
        let mut n = 0u64;
        while let Some(got) = seq.next_element_seed(Expect(Whole))? {
            match got {
                Got::Is(v) => {
                    if let Some(slot) = usize::try_from(n).ok().and_then(|i| pair.get_mut(i)) {
                        *slot = v;
                    }
                    n = n.saturating_add(1);
                }
                Got::Not(found) => {
                    drain(&mut seq)?;
                    return Ok(Got::Not(format!("an array holding {found}")));
                }
            }
        }
        if n == 2 {
            Ok(Got::Is((pair[0], pair[1])))
        } else {
            Ok(Got::Not(format!("an array of {n} numbers")))
        }
    }
}
