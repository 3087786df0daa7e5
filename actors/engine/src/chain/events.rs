//! The ABCI events of one tx (or of a block's own phases), their strings in one buffer.
//!
//! A block of 20 txs carries ~800 attributes. Parsed into a `Vec<Event>` of `Vec<Attribute>`s
//! of strings, each event and each long value was an allocation, and each was freed again when
//! the block was dropped: the `/block_results` parse was ~12 % of a catch-up's CPU and the drops
//! ~3 %. Here a tx's event types, keys and values are appended to one `String` and each event and
//! attribute is a span of it (three allocations per tx): the parse and drop of a recorded answer
//! took 55 µs instead of 85 µs in a scratch program (`benches/README.md`). Readers see each
//! event as an [`EventRef`] of `&str`s; [`Event`] stays the owned form builders use.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::types::{Attribute, Event};

/// A tx's events, in order.
#[derive(Clone, Default)]
pub struct Events {
    text: String,
    events: Vec<EventSpan>,
    attributes: Vec<AttributeSpan>,
}

/// Where a string is in [`Events::text`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    /// Where `text` goes when appended to `buffer`; `None` past 4 GiB.
    fn after(buffer: &str, text: &str) -> Option<Span> {
        let start = u32::try_from(buffer.len()).ok()?;
        let len = u32::try_from(text.len()).ok()?;
        start.checked_add(len)?;
        Some(Span { start, len })
    }

    fn of(self, text: &str) -> &str {
        let start = self.start as usize;
        &text[start..start + self.len as usize]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct EventSpan {
    kind: Span,
    /// Its attributes: `attributes[first..first + count]`.
    first: u32,
    count: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct AttributeSpan {
    key: Span,
    value: Span,
    index: bool,
}

/// One event, borrowed; serialized as [`Event`] is.
#[derive(Clone, Copy, Serialize)]
pub struct EventRef<'a> {
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub attributes: Attributes<'a>,
}

/// An event's attributes, borrowed (from [`Events`] or from an owned [`Event`]).
#[derive(Clone, Copy)]
pub struct Attributes<'a>(AttributesOf<'a>);

#[derive(Clone, Copy)]
enum AttributesOf<'a> {
    Spans {
        text: &'a str,
        spans: &'a [AttributeSpan],
    },
    Owned(&'a [Attribute]),
}

/// One attribute, borrowed; serialized as [`Attribute`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AttributeRef<'a> {
    pub key: &'a str,
    pub value: &'a str,
    pub index: bool,
}

impl Events {
    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    pub fn iter(&self) -> EventsIter<'_> {
        EventsIter {
            events: self,
            spans: self.events.iter(),
        }
    }

    /// The event at `index`.
    pub fn get(&self, index: usize) -> Option<EventRef<'_>> {
        self.events.get(index).map(|event| self.event(event))
    }

    /// Appends an event.
    pub fn push(&mut self, event: EventRef<'_>) {
        let first = self.attributes.len() as u32;
        let kind = self.append(event.kind);
        for attribute in event.attributes {
            let key = self.append(attribute.key);
            let value = self.append(attribute.value);
            self.attributes.push(AttributeSpan {
                key,
                value,
                index: attribute.index,
            });
        }
        self.events.push(EventSpan {
            kind,
            first,
            count: self.attributes.len() as u32 - first,
        });
    }

    /// Appends every event of `other`.
    pub fn extend(&mut self, other: &Events) {
        for event in other {
            self.push(event);
        }
    }

    /// Owned copies of the events.
    pub fn to_vec(&self) -> Vec<Event> {
        self.iter().map(EventRef::to_owned).collect()
    }

    fn event(&self, event: &EventSpan) -> EventRef<'_> {
        let (first, count) = (event.first as usize, event.count as usize);
        EventRef {
            kind: event.kind.of(&self.text),
            attributes: Attributes(AttributesOf::Spans {
                text: &self.text,
                spans: &self.attributes[first..first + count],
            }),
        }
    }

    fn append(&mut self, text: &str) -> Span {
        let span = Span::after(&self.text, text).expect("a tx's events under 4 GiB");
        self.text.push_str(text);
        span
    }
}

/// The events of an [`Events`], borrowed, in order.
pub struct EventsIter<'a> {
    events: &'a Events,
    spans: std::slice::Iter<'a, EventSpan>,
}

impl<'a> Iterator for EventsIter<'a> {
    type Item = EventRef<'a>;

    fn next(&mut self) -> Option<EventRef<'a>> {
        self.spans.next().map(|span| self.events.event(span))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.spans.size_hint()
    }
}

impl DoubleEndedIterator for EventsIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.spans.next_back().map(|span| self.events.event(span))
    }
}

impl ExactSizeIterator for EventsIter<'_> {}

impl<'a> IntoIterator for &'a Events {
    type Item = EventRef<'a>;
    type IntoIter = EventsIter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Owned copies of the events, in order.
impl IntoIterator for Events {
    type Item = Event;
    type IntoIter = std::vec::IntoIter<Event>;

    fn into_iter(self) -> Self::IntoIter {
        self.to_vec().into_iter()
    }
}

impl From<Vec<Event>> for Events {
    fn from(events: Vec<Event>) -> Self {
        let mut all = Events::default();
        for event in &events {
            all.push(event.view());
        }
        all
    }
}

/// The same events (where each string sits in the buffer does not matter).
impl PartialEq for Events {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Events {}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> EventRef<'a> {
    /// The value of the first attribute named `key`.
    pub fn attr(&self, key: &str) -> Option<&'a str> {
        self.attributes
            .iter()
            .find(|a| a.key == key)
            .map(|a| a.value)
    }

    pub fn to_owned(self) -> Event {
        Event {
            kind: self.kind.into(),
            attributes: self
                .attributes
                .iter()
                .map(|a| Attribute {
                    key: a.key.into(),
                    value: a.value.into(),
                    index: a.index,
                })
                .collect(),
        }
    }
}

impl fmt::Debug for EventRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("kind", &self.kind)
            .field("attributes", &self.attributes)
            .finish()
    }
}

impl PartialEq for EventRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.attributes.iter().eq(other.attributes.iter())
    }
}

impl<'a> Attributes<'a> {
    pub fn len(&self) -> usize {
        match self.0 {
            AttributesOf::Spans { spans, .. } => spans.len(),
            AttributesOf::Owned(owned) => owned.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, index: usize) -> Option<AttributeRef<'a>> {
        match self.0 {
            AttributesOf::Spans { text, spans } => spans.get(index).map(|span| AttributeRef {
                key: span.key.of(text),
                value: span.value.of(text),
                index: span.index,
            }),
            AttributesOf::Owned(owned) => owned.get(index).map(|a| AttributeRef {
                key: &a.key,
                value: &a.value,
                index: a.index,
            }),
        }
    }

    pub fn iter(&self) -> AttributesIter<'a> {
        AttributesIter {
            attributes: *self,
            next: 0,
            end: self.len(),
        }
    }
}

/// The attributes of an event, borrowed, in order.
pub struct AttributesIter<'a> {
    attributes: Attributes<'a>,
    next: usize,
    end: usize,
}

impl<'a> Iterator for AttributesIter<'a> {
    type Item = AttributeRef<'a>;

    fn next(&mut self) -> Option<AttributeRef<'a>> {
        if self.next == self.end {
            return None;
        }
        self.next += 1;
        self.attributes.get(self.next - 1)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.end - self.next, Some(self.end - self.next))
    }
}

impl ExactSizeIterator for AttributesIter<'_> {}

impl<'a> IntoIterator for Attributes<'a> {
    type Item = AttributeRef<'a>;
    type IntoIter = AttributesIter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a> IntoIterator for &Attributes<'a> {
    type Item = AttributeRef<'a>;
    type IntoIter = AttributesIter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Serialize for Attributes<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl fmt::Debug for Attributes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Event {
    /// This event, borrowed as the readers of [`Events`] see one.
    pub fn view(&self) -> EventRef<'_> {
        EventRef {
            kind: &self.kind,
            attributes: Attributes(AttributesOf::Owned(&self.attributes)),
        }
    }
}

/// Written as CometBFT writes events (as [`Event`] serializes), without copying them out.
impl Serialize for Events {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// Read as [`Event`]s are (a missing or `null` type, key or value is empty; `index` defaults
/// to false; `null` for the list is no events; unknown fields are skipped), straight into the
/// buffer. Two differences no CometBFT node produces: a field given twice is not refused (the
/// last wins; a second `attributes` list adds to the first), and an event or attribute written
/// as an array instead of an object is refused.
impl<'de> Deserialize<'de> for Events {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct List;
        impl<'de> Visitor<'de> for List {
            type Value = Events;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of events")
            }

            fn visit_unit<E: de::Error>(self) -> Result<Events, E> {
                Ok(Events::default())
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Events, A::Error> {
                let mut events = Events::default();
                while seq.next_element_seed(EventSeed(&mut events))?.is_some() {}
                Ok(events)
            }
        }
        deserializer.deserialize_any(List)
    }
}

/// One event read into [`Events`].
struct EventSeed<'a>(&'a mut Events);

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let events = self.0;
        let first = events.attributes.len() as u32;
        let mut kind = Span::default();
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Type => kind = map.next_value_seed(TextSeed(&mut events.text))?,
                Field::Attributes => map.next_value_seed(AttributesSeed(&mut *events))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        events.events.push(EventSpan {
            kind,
            first,
            count: events.attributes.len() as u32 - first,
        });
        Ok(())
    }
}

/// An event's attributes (a list or `null`) read into [`Events`].
struct AttributesSeed<'a>(&'a mut Events);

impl<'de> DeserializeSeed<'de> for AttributesSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AttributesSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of attributes")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(AttributeSeed(&mut *self.0))?
            .is_some()
        {}
        Ok(())
    }
}

/// One attribute read into [`Events`].
struct AttributeSeed<'a>(&'a mut Events);

impl<'de> DeserializeSeed<'de> for AttributeSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for AttributeSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an attribute")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let events = self.0;
        let (mut key, mut value, mut index) = (Span::default(), Span::default(), false);
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Key => key = map.next_value_seed(TextSeed(&mut events.text))?,
                Field::Value => value = map.next_value_seed(TextSeed(&mut events.text))?,
                Field::Index => index = map.next_value::<Option<bool>>()?.unwrap_or(false),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        events.attributes.push(AttributeSpan { key, value, index });
        Ok(())
    }
}

/// A string (or `null`: empty) appended to the buffer.
struct TextSeed<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for TextSeed<'_> {
    type Value = Span;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Span, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TextSeed<'_> {
    type Value = Span;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or null")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Span, E> {
        let span =
            Span::after(self.0, text).ok_or_else(|| E::custom("a tx's events over 4 GiB"))?;
        self.0.push_str(text);
        Ok(span)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Span, E> {
        Ok(Span::default())
    }

    fn visit_none<E: de::Error>(self) -> Result<Span, E> {
        Ok(Span::default())
    }
}

/// The fields of an event and of an attribute (one enum: the names do not overlap).
enum Field {
    Type,
    Attributes,
    Key,
    Value,
    Index,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl Visitor<'_> for Name {
            type Value = Field;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<Field, E> {
                Ok(match name {
                    "type" => Field::Type,
                    "attributes" => Field::Attributes,
                    "key" => Field::Key,
                    "value" => Field::Value,
                    "index" => Field::Index,
                    _ => Field::Other,
                })
            }
        }
        deserializer.deserialize_identifier(Name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REAL_SHAPES: &str = r#"[{"attributes":[{"key":"","value":"\n0/dydxprotocol.clob.MsgProposedOperationsResponse","index":false}]},
        {"type":"coin_spent","attributes":[{"key":"c3BlbmRlcg==","value":null}]},
        {"type":null,"attributes":null},
        {"type":"transfer","attributes":[{"key":"recipient","value":"init1\u00e9x","index":true},{"key":"amount","value":"1uinit","extra":[1]}],"extra":{}}]"#;

    /// Shapes real nodes send (dYdX: finalize-block events without `type`, empty keys; Sei: a
    /// `null` attribute value, no `index`): each reads as an event, never as a broken block.
    #[test]
    fn events_without_type_and_null_values_read() {
        let events: Events = serde_json::from_str(REAL_SHAPES).unwrap();
        let event = |i| events.get(i).unwrap();
        assert_eq!(event(0).kind, "");
        assert!(event(0)
            .attributes
            .get(0)
            .unwrap()
            .value
            .ends_with("MsgProposedOperationsResponse"));
        assert_eq!(event(1).attributes.get(0).unwrap().value, "");
        assert!(!event(1).attributes.get(0).unwrap().index);
        assert_eq!((event(2).kind, event(2).attributes.len()), ("", 0));
        assert_eq!(event(3).attr("recipient"), Some("init1éx"));
        assert!(event(3).attributes.get(0).unwrap().index);
        assert_eq!(event(3).attr("amount"), Some("1uinit"));
        assert_eq!(events.len(), 4);
        assert!(serde_json::from_str::<Events>("null").unwrap().is_empty());
    }

    /// The buffer holds what the owned form holds, read either way, and writes it back the same.
    #[test]
    fn the_same_events_as_owned_ones() {
        let owned: Vec<Event> = serde_json::from_str(REAL_SHAPES).unwrap();
        let events: Events = serde_json::from_str(REAL_SHAPES).unwrap();
        assert_eq!(events.to_vec(), owned);
        assert_eq!(Events::from(owned.clone()), events);
        assert!(events.iter().zip(&owned).all(|(a, b)| a == b.view()));
        assert_eq!(
            serde_json::to_string(&events).unwrap(),
            serde_json::to_string(&owned).unwrap()
        );
        let mut twice = events.clone();
        twice.extend(&events);
        assert_eq!(twice.len(), 8);
        assert_eq!(twice.get(7).unwrap(), events.get(3).unwrap());
    }

    #[test]
    fn a_broken_event_is_refused() {
        for json in [
            r#"[{"type":1}]"#,
            r#"[{"attributes":[{"key":true}]}]"#,
            r#"{"type":"x"}"#,
        ] {
            assert!(serde_json::from_str::<Events>(json).is_err(), "{json}");
        }
    }
}
