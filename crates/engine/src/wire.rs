//! Settings as words: every enumerated scenario setting has one wire name (the same in the URL
//! query, JSON and CLI flags) and one line of help, and both the page's selects and `--help` list
//! them from the enum itself.

use std::borrow::Cow;

/// One value a setting can take: its wire name and what it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub value: Cow<'static, str>,
    pub help: Cow<'static, str>,
}

impl Choice {
    pub fn new(value: impl Into<Cow<'static, str>>, help: impl Into<Cow<'static, str>>) -> Choice {
        Choice {
            value: value.into(),
            help: help.into(),
        }
    }

    /// `value (help)`, or the value alone: how `--help` lists it.
    pub fn describe(&self) -> String {
        if self.help.is_empty() {
            self.value.to_string()
        } else {
            format!("{} ({})", self.value, self.help)
        }
    }
}

/// An enumerated setting with wire names.
pub trait Wire: Copy + PartialEq + 'static {
    const ALL: &'static [Self];

    /// Each value's wire name, in [`Wire::ALL`]'s order.
    const NAMES: &'static [&'static str];

    /// Each value's help, in [`Wire::ALL`]'s order.
    const HELPS: &'static [&'static str];

    fn as_str(self) -> &'static str;

    fn help(self) -> &'static str;

    /// Reads a wire name, case-insensitively; the error lists every name that would have been
    /// accepted.
    fn parse(text: &str) -> Result<Self, String> {
        // The work is done on the names, so it is compiled once rather than once per enum.
        wire_position(text, Self::NAMES).map(|i| Self::ALL[i])
    }

    fn choices() -> Vec<Choice> {
        choices_of(Self::NAMES, Self::HELPS)
    }
}

fn choices_of(names: &'static [&'static str], helps: &'static [&'static str]) -> Vec<Choice> {
    names
        .iter()
        .zip(helps)
        .map(|(value, help)| Choice::new(*value, *help))
        .collect()
}

/// Where `text`, a wire name in any letter case, is in `names`; the error lists every name.
fn wire_position(text: &str, names: &[&str]) -> Result<usize, String> {
    let wanted = text.trim().to_ascii_lowercase();
    names
        .iter()
        .position(|name| *name == wanted)
        .ok_or_else(|| format!("`{}` is not one of {}", text.trim(), names.join(", ")))
}

/// Declares a kebab-case wire enum: `Variant = "wire" => "help"`. It gets inherent `ALL`, `as_str`
/// and `parse` (so callers need no trait in scope), serde under the wire names, `Display`, and
/// [`Wire`].
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $wire:literal => $help:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $wire)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),+ }
            }

            pub fn parse(text: &str) -> Result<$name, String> {
                <$name as $crate::wire::Wire>::parse(text)
            }
        }

        impl $crate::wire::Wire for $name {
            const ALL: &'static [$name] = $name::ALL;
            const NAMES: &'static [&'static str] = &[$($wire),+];
            const HELPS: &'static [&'static str] = &[$($help),+];

            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }

            fn help(self) -> &'static str {
                match self { $($name::$variant => $help),+ }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use wire_enum;

impl Wire for crate::units::Units {
    const ALL: &'static [Self] = &[crate::units::Units::Gb, crate::units::Units::Gib];
    const NAMES: &'static [&'static str] = &["gb", "gib"];
    const HELPS: &'static [&'static str] = &["GB, 10⁹ bytes", "GiB, 2³⁰ bytes"];

    fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    fn help(self) -> &'static str {
        Self::HELPS[self as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;
    use crate::optimizer::Optimizer;
    use crate::sharding::Sharding;

    #[test]
    fn wire_names_round_trip_and_errors_list_the_choices() {
        for d in Dtype::ALL {
            assert_eq!(Dtype::parse(d.as_str()).unwrap(), *d);
        }
        let err = Optimizer::parse("adam-ish").unwrap_err();
        assert!(err.contains("adamw-8bit"), "{err}");
        assert_eq!(Sharding::parse(" ZeRO3 ").unwrap(), Sharding::Zero3);
        for u in <crate::units::Units as Wire>::ALL {
            assert_eq!(
                <crate::units::Units as Wire>::parse(u.as_str()).unwrap(),
                *u
            );
        }
    }

    #[test]
    fn every_choice_says_what_it_means() {
        for choice in Dtype::choices()
            .into_iter()
            .chain(Optimizer::choices())
            .chain(Sharding::choices())
            .chain(crate::units::Units::choices())
        {
            assert!(!choice.help.is_empty(), "{} has no help", choice.value);
        }
    }
}
