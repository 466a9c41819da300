//! The scenario as JSON, written and read through the field table: the same keys as the URL and
//! the CLI flags, each value in its codec's JSON form. Unknown keys are refused by name, missing
//! keys keep their defaults, and a value a field refuses is an error naming the field.

use super::fields::JSON_SLOTS;
use super::{Scenario, KEYS};
use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

impl Serialize for Scenario {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(KEYS.len()))?;
        for (key, slot) in KEYS.iter().zip(JSON_SLOTS) {
            map.serialize_entry(key, &slot.write_json(self))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Scenario {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Scenario, D::Error> {
        let object = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
        Scenario::from_json_object(&object).map_err(|e| match e {
            JsonError::UnknownKey(key) => D::Error::unknown_field(&key, KEYS),
            JsonError::Field(message) => D::Error::custom(message),
        })
    }
}

/// Why a JSON object is not a scenario.
#[derive(Debug, PartialEq)]
pub enum JsonError {
    /// A key no field has.
    UnknownKey(String),
    /// `key: what is wrong with its value`.
    Field(String),
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonError::UnknownKey(key) => match super::replaced_by(key) {
                Some(now) => write!(f, "unknown field `{key}`; {now} replaced it"),
                None => write!(f, "unknown field `{key}`"),
            },
            JsonError::Field(message) => f.write_str(message),
        }
    }
}

impl Scenario {
    /// The scenario an already parsed JSON object describes: what `Deserialize` reads, for a
    /// caller that holds the parsed value (the page reads a pasted text once).
    pub fn from_json_object(
        object: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Scenario, JsonError> {
        let mut scenario = Scenario::default();
        for (key, value) in object {
            let slot = KEYS
                .iter()
                .position(|k| k == key)
                .map(|i| JSON_SLOTS[i])
                .ok_or_else(|| JsonError::UnknownKey(key.clone()))?;
            slot.read_json(&mut scenario, value)
                .map_err(|message| JsonError::Field(format!("{key}: {message}")))?;
        }
        Ok(scenario)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_json_typed_and_read_back() {
        let (s, errors) = Scenario::from_pairs([
            ("params", "8B"),
            ("batch", "4"),
            ("tied", "false"),
            ("vram", "16376MiB"),
            ("tight", "90"),
            ("custom", "RSSM dynamics:500MiB"),
            ("mode", "qlora"),
            ("weights", "nf4"),
        ]);
        assert!(errors.is_empty(), "{errors:?}");
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["params"], serde_json::json!(8e9));
        assert_eq!(json["batch"], serde_json::json!(4));
        assert_eq!(json["tied"], serde_json::json!(false));
        assert_eq!(json["gated"], serde_json::Value::Null);
        assert_eq!(json["vram"], serde_json::json!(16376u64 << 20));
        assert_eq!(json["tight"], serde_json::json!(90.0));
        assert_eq!(json["lora-targets"], serde_json::json!("q,v"));
        assert_eq!(
            json["custom"],
            serde_json::json!([{"name": "RSSM dynamics", "bytes": 500u64 << 20}])
        );
        let back: Scenario = serde_json::from_value(json).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn bad_json_names_the_field_or_the_unknown_key() {
        let unknown = serde_json::from_str::<Scenario>(r#"{"batchsize": 3}"#).unwrap_err();
        assert!(
            unknown.to_string().contains("unknown field `batchsize`"),
            "{unknown}"
        );
        for (json, key) in [
            (r#"{"batch": -3}"#, "batch"),
            (r#"{"batch": 2.5}"#, "batch"),
            (r#"{"vram": 0}"#, "vram"),
            (r#"{"gpu": "h900"}"#, "gpu"),
            (r#"{"custom": [{"name": ""}]}"#, "custom"),
            (r#"{"tight": 0}"#, "tight"),
        ] {
            let error = serde_json::from_str::<Scenario>(json)
                .unwrap_err()
                .to_string();
            assert!(error.starts_with(&format!("{key}: ")), "{json}: {error}");
        }
        for (json, message) in [
            (r#"{"vram": [24]}"#, "vram: a list is not a size"),
            (r#"{"vram": true}"#, "vram: `true` is not a size"),
            (
                r#"{"batch": {}}"#,
                "batch: an object is not a value this field takes",
            ),
            (
                r#"{"custom": [7]}"#,
                "custom: `7` is not {\"name\": …, \"bytes\": …}",
            ),
        ] {
            let error = serde_json::from_str::<Scenario>(json).unwrap_err();
            assert!(error.to_string().starts_with(message), "{json}: {error}");
        }
        let partial: Scenario = serde_json::from_str(r#"{"batch": 8}"#).unwrap();
        assert_eq!(partial.batch, 8);
        assert_eq!(partial.seq, Scenario::default().seq);
    }
}
