//! Decoding relay events from ABCI events in SDK 0.50 / ibc-go v8 / OPinit form.
//! An event of another type is `Ok(None)`; a relay event missing an attribute it must carry
//! is an error naming it (the caller logs, counts and skips it — it never fails the block).

use super::event::*;
use crate::chain::types::EventRef;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{event}: {problem}")]
pub struct RelayDecodeError {
    pub event: String,
    pub problem: String,
}

/// What decoding needs to know about the chain that emitted the event.
#[derive(Debug, Clone, Copy, Default)]
pub struct RelayContext {
    /// The OPinit bridge of this chain when it is a rollup: L2 events omit it.
    pub l2_bridge_id: Option<u64>,
}

struct Attrs<'a> {
    event: EventRef<'a>,
}

impl Attrs<'_> {
    fn fail(&self, problem: String) -> RelayDecodeError {
        RelayDecodeError {
            event: self.event.kind.to_string(),
            problem,
        }
    }

    fn text(&self, key: &str) -> Result<String, RelayDecodeError> {
        self.event
            .attr(key)
            .map(str::to_string)
            .ok_or_else(|| self.fail(format!("missing attribute {key}")))
    }

    fn text_or_empty(&self, key: &str) -> String {
        self.event.attr(key).unwrap_or_default().to_string()
    }

    fn number(&self, key: &str) -> Result<u64, RelayDecodeError> {
        let text = self.text(key)?;
        text.parse()
            .map_err(|_| self.fail(format!("attribute {key} is not an integer: {text:?}")))
    }

    fn flag(&self, key: &str) -> Result<bool, RelayDecodeError> {
        match self.text(key)?.as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(self.fail(format!("attribute {key} is not a boolean: {other:?}"))),
        }
    }

    /// A value sent both as hex (binary-safe) and as a deprecated raw string: hex wins.
    fn bytes_as_text(
        &self,
        hex_key: &str,
        raw_key: &str,
    ) -> Result<Option<String>, RelayDecodeError> {
        if let Some(hex_text) = self.event.attr(hex_key) {
            let bytes = hex::decode(hex_text)
                .map_err(|_| self.fail(format!("attribute {hex_key} is not hex")))?;
            return Ok(Some(String::from_utf8_lossy(&bytes).into_owned()));
        }
        Ok(self.event.attr(raw_key).map(str::to_string))
    }

    fn packet(&self, with_data: bool) -> Result<Packet, RelayDecodeError> {
        Ok(Packet {
            src_port: self.text("packet_src_port")?,
            src_channel: self.text("packet_src_channel")?,
            dst_port: self.text("packet_dst_port")?,
            dst_channel: self.text("packet_dst_channel")?,
            sequence: self.number("packet_sequence")?,
            timeout_height: self
                .event
                .attr("packet_timeout_height")
                .unwrap_or("0-0")
                .to_string(),
            timeout_timestamp: match self.event.attr("packet_timeout_timestamp") {
                None => 0,
                Some(_) => self.number("packet_timeout_timestamp")?,
            },
            data: if with_data {
                self.bytes_as_text("packet_data_hex", "packet_data")?
            } else {
                None
            },
        })
    }
}

/// Reads an ICS-04 acknowledgement: `{"result":…}` is a success, `{"error":…}` a failure.
fn acknowledgement(raw: String) -> Acknowledgement {
    let parsed: Option<serde_json::Value> = serde_json::from_str(&raw).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error")).map(|e| {
        e.as_str()
            .map(str::to_string)
            .unwrap_or_else(|| e.to_string())
    });
    let success = error.is_none() && parsed.as_ref().is_some_and(|v| v.get("result").is_some());
    Acknowledgement {
        raw,
        success,
        error: match (success, error) {
            (false, None) => Some("unrecognised acknowledgement".into()),
            (_, error) => error,
        },
    }
}

/// Decodes one ABCI event; `Ok(None)` when it is not a relay event.
pub fn decode_relay_event(
    event: EventRef<'_>,
    context: RelayContext,
) -> Result<Option<RelayKind>, RelayDecodeError> {
    let a = Attrs { event };
    if let Some(kind) = packet_event(&a)? {
        return Ok(Some(kind));
    }
    bridge_event(&a, context)
}

/// An ICS-04 packet event; `Ok(None)` for any other event.
fn packet_event(a: &Attrs<'_>) -> Result<Option<RelayKind>, RelayDecodeError> {
    let kind = match a.event.kind {
        "send_packet" => RelayKind::SendPacket(a.packet(true)?),
        "recv_packet" => RelayKind::RecvPacket(a.packet(true)?),
        "write_acknowledgement" => {
            let raw = a
                .bytes_as_text("packet_ack_hex", "packet_ack")?
                .ok_or_else(|| a.fail("missing attribute packet_ack_hex".into()))?;
            RelayKind::WriteAcknowledgement {
                packet: a.packet(true)?,
                ack: acknowledgement(raw),
            }
        }
        "acknowledge_packet" => RelayKind::AcknowledgePacket(a.packet(false)?),
        "timeout_packet" => RelayKind::TimeoutPacket(a.packet(false)?),
        _ => return Ok(None),
    };
    Ok(Some(kind))
}

/// An OPinit bridge event (deposit, withdrawal, output proposal); `Ok(None)` for any other
/// event.
fn bridge_event(
    a: &Attrs<'_>,
    context: RelayContext,
) -> Result<Option<RelayKind>, RelayDecodeError> {
    let event = a.event;
    let l2_bridge = || {
        event
            .attr("bridge_id")
            .and_then(|b| b.parse().ok())
            .or(context.l2_bridge_id)
    };
    let kind = match event.kind {
        "initiate_token_deposit" => RelayKind::InitiateTokenDeposit(DepositInitiated {
            key: BridgeKey {
                bridge_id: a.number("bridge_id")?,
                sequence: a.number("l1_sequence")?,
            },
            from: a.text("from")?,
            to: a.text("to")?,
            l1_denom: a.text("l1_denom")?,
            l2_denom: a.text_or_empty("l2_denom"),
            amount: a.text("amount")?,
        }),
        "finalize_token_deposit" => RelayKind::FinalizeTokenDeposit(DepositFinalized {
            bridge_id: l2_bridge(),
            l1_sequence: a.number("l1_sequence")?,
            sender: a.text("sender")?,
            recipient: a.text("recipient")?,
            denom: a.text("denom")?,
            base_denom: a.text_or_empty("base_denom"),
            amount: a.text("amount")?,
            finalize_height: a.number("finalize_height")?,
            success: match event.attr("success") {
                None => true,
                Some(_) => a.flag("success")?,
            },
            reason: event.attr("reason").map(str::to_string),
        }),
        "initiate_token_withdrawal" => RelayKind::InitiateTokenWithdrawal(WithdrawalInitiated {
            bridge_id: l2_bridge(),
            l2_sequence: a.number("l2_sequence")?,
            from: a.text("from")?,
            to: a.text("to")?,
            denom: a.text("denom")?,
            base_denom: a.text_or_empty("base_denom"),
            amount: a.text("amount")?,
        }),
        "propose_output" => RelayKind::ProposeOutput(OutputProposed {
            bridge_id: a.number("bridge_id")?,
            output_index: a.number("output_index")?,
            l2_block_number: a.number("l2_block_number")?,
            proposer: a.text_or_empty("proposer"),
            output_root: a.text_or_empty("output_root"),
        }),
        "finalize_token_withdrawal" => RelayKind::FinalizeTokenWithdrawal(WithdrawalFinalized {
            key: BridgeKey {
                bridge_id: a.number("bridge_id")?,
                sequence: a.number("l2_sequence")?,
            },
            output_index: a.number("output_index")?,
            from: a.text("from")?,
            to: a.text("to")?,
            l1_denom: a.text_or_empty("l1_denom"),
            l2_denom: a.text_or_empty("l2_denom"),
            amount: a.text("amount")?,
        }),
        _ => return Ok(None),
    };
    Ok(Some(kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::types::Event;

    const PACKET: &[(&str, &str)] = &[
        ("packet_timeout_height", "0-0"),
        ("packet_timeout_timestamp", "1767225900000000000"),
        ("packet_sequence", "17"),
        ("packet_src_port", "transfer"),
        ("packet_src_channel", "channel-0"),
        ("packet_dst_port", "transfer"),
        ("packet_dst_channel", "channel-3"),
        ("packet_channel_ordering", "ORDER_UNORDERED"),
        ("packet_connection", "connection-0"),
        ("connection_id", "connection-0"),
    ];

    fn event(kind: &str, extra: &[(&str, &str)], base: &[(&str, &str)]) -> Event {
        let all: Vec<(&str, &str)> = base.iter().chain(extra).copied().collect();
        let mut event = Event::new(kind, &all);
        event.attributes.push(crate::chain::types::Attribute {
            key: "msg_index".into(),
            value: "0".into(),
            index: true,
        });
        event
    }

    fn decode(event: &Event) -> RelayKind {
        decode_relay_event(event.view(), RelayContext::default())
            .unwrap()
            .unwrap()
    }

    #[test]
    fn ibc_lifecycle_events_decode_with_their_packet_key() {
        let data =
            r#"{"amount":"100","denom":"uinit","memo":"","receiver":"init1r","sender":"init1s"}"#;
        let send = event(
            "send_packet",
            &[
                ("packet_data", "ignored"),
                ("packet_data_hex", &hex::encode(data)),
            ],
            PACKET,
        );
        let RelayKind::SendPacket(packet) = decode(&send) else {
            panic!("not a send")
        };
        assert_eq!(
            packet.data.as_deref(),
            Some(data),
            "hex wins over the raw string"
        );
        assert_eq!(packet.timeout_timestamp, 1_767_225_900_000_000_000);
        let key = PacketKey {
            port: "transfer".into(),
            channel: "channel-0".into(),
            sequence: 17,
        };
        for kind in ["recv_packet", "acknowledge_packet", "timeout_packet"] {
            assert_eq!(
                decode(&event(kind, &[("packet_data", data)], PACKET)).packet_key(),
                Some(key.clone()),
                "{kind}"
            );
        }
        assert!(matches!(
            decode(&event("acknowledge_packet", &[], PACKET)),
            RelayKind::AcknowledgePacket(Packet { data: None, .. })
        ));
    }

    #[test]
    fn acknowledgements_tell_success_from_error() {
        let ok = event(
            "write_acknowledgement",
            &[("packet_ack_hex", &hex::encode(r#"{"result":"AQ=="}"#))],
            PACKET,
        );
        let RelayKind::WriteAcknowledgement { ack, .. } = decode(&ok) else {
            panic!()
        };
        assert!(ack.success && ack.error.is_none());
        let failed = event(
            "write_acknowledgement",
            &[(
                "packet_ack",
                r#"{"error":"ABCI code: 5: error handling packet: insufficient funds"}"#,
            )],
            PACKET,
        );
        let RelayKind::WriteAcknowledgement { ack, .. } = decode(&failed) else {
            panic!()
        };
        assert!(!ack.success);
        assert!(ack.error.unwrap().contains("insufficient funds"));
    }

    #[test]
    fn opinit_events_are_keyed_by_bridge_and_sequence() {
        let deposit = Event::new(
            "initiate_token_deposit",
            &[
                ("bridge_id", "2"),
                ("l1_sequence", "9"),
                ("from", "init1from"),
                ("to", "init1to"),
                ("l1_denom", "uinit"),
                ("l2_denom", "l2/abc"),
                ("amount", "1000"),
                ("data", ""),
            ],
        );
        assert_eq!(
            decode(&deposit).bridge_key(),
            Some((
                BridgeKey {
                    bridge_id: 2,
                    sequence: 9
                },
                true
            ))
        );
        let finalize = Event::new(
            "finalize_token_deposit",
            &[
                ("l1_sequence", "9"),
                ("sender", "init1from"),
                ("recipient", "init1to"),
                ("denom", "l2/abc"),
                ("base_denom", "uinit"),
                ("amount", "1000"),
                ("finalize_height", "120"),
                ("success", "false"),
                ("reason", "recipient is blocked"),
            ],
        );
        // The L2 event has no bridge id: it comes from the chain's registry entry.
        let context = RelayContext {
            l2_bridge_id: Some(2),
        };
        let kind = decode_relay_event(finalize.view(), context)
            .unwrap()
            .unwrap();
        assert_eq!(kind.bridge_key().map(|(k, _)| k.sequence), Some(9));
        let RelayKind::FinalizeTokenDeposit(d) = kind else {
            panic!()
        };
        assert!(!d.success);
        assert_eq!(d.reason.as_deref(), Some("recipient is blocked"));
        assert_eq!(decode(&finalize).bridge_key(), None);

        let withdrawal = Event::new(
            "initiate_token_withdrawal",
            &[
                ("from", "init1a"),
                ("to", "init1b"),
                ("denom", "l2/abc"),
                ("base_denom", "uinit"),
                ("amount", "5"),
                ("l2_sequence", "3"),
            ],
        );
        assert_eq!(
            decode_relay_event(withdrawal.view(), context)
                .unwrap()
                .unwrap()
                .bridge_key(),
            Some((
                BridgeKey {
                    bridge_id: 2,
                    sequence: 3
                },
                false
            ))
        );
    }

    #[test]
    fn malformed_relay_events_name_the_attribute_and_others_are_ignored() {
        let mut broken = event("send_packet", &[], PACKET);
        broken.attributes.retain(|a| a.key != "packet_sequence");
        let error = decode_relay_event(broken.view(), RelayContext::default()).unwrap_err();
        assert!(error.to_string().contains("packet_sequence"), "{error}");
        let bad_number = event("recv_packet", &[("packet_sequence", "x")], &PACKET[..2]);
        assert!(decode_relay_event(bad_number.view(), RelayContext::default()).is_err());
        let transfer = Event::new("transfer", &[("recipient", "init1x"), ("amount", "1uinit")]);
        assert_eq!(
            decode_relay_event(transfer.view(), RelayContext::default()),
            Ok(None)
        );
    }
}
