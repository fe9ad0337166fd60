//! Capture file writers: classic pcap (tcpdump.org pcap-savefile(5),
//! draft-ietf-opsawg-pcap: µs or ns magic) and pcapng (draft-ietf-opsawg-pcapng:
//! SHB, one IDB, EPBs), both little-endian, LINKTYPE_ETHERNET (docs/semantics/formats.md §8).
//! Records are streamed into the writer given (the binding buffers it);
//! nothing is kept in memory.
//! Timestamps are simulated time, counted from the Unix epoch.

use serde::Deserialize;
use std::io::{self, Write};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// pcap, microsecond timestamps (magic 0xA1B2C3D4): tcpdump -w
    Pcap,
    /// pcap, nanosecond timestamps (magic 0xA1B23C4D): tcpdump --nano
    PcapNs,
    /// pcapng with `if_tsresol` = 9 (ns): tshark/dumpcap -w
    Pcapng,
}

const LINKTYPE_ETHERNET: u16 = 1;

pub struct Writer<W: Write> {
    out: W,
    format: Format,
    pad: [u8; 4],
}

fn le16(v: u16) -> [u8; 2] {
    v.to_le_bytes()
}
fn le32(v: u32) -> [u8; 4] {
    v.to_le_bytes()
}

/// One pcapng option (code, value) with its padding to 32 bits.
fn option(buf: &mut Vec<u8>, code: u16, value: &[u8]) {
    buf.extend_from_slice(&le16(code));
    buf.extend_from_slice(&le16(value.len() as u16));
    buf.extend_from_slice(value);
    buf.resize(buf.len().next_multiple_of(4), 0);
}

/// A block: type, total length, body, total length again.
fn block(out: &mut impl Write, ty: u32, body: &[u8]) -> io::Result<()> {
    let total = (12 + body.len()) as u32;
    out.write_all(&le32(ty))?;
    out.write_all(&le32(total))?;
    out.write_all(body)?;
    out.write_all(&le32(total))
}

impl<W: Write> Writer<W> {
    /// Write the file's header(s) to `out`.
    pub fn create(mut out: W, format: Format, snaplen: u32, if_name: &str) -> io::Result<Self> {
        match format {
            Format::Pcap | Format::PcapNs => {
                let magic: u32 = if format == Format::Pcap {
                    0xA1B2_C3D4
                } else {
                    0xA1B2_3C4D
                };
                out.write_all(&le32(magic))?;
                out.write_all(&le16(2))?;
                out.write_all(&le16(4))?;
                out.write_all(&le32(0))?; // thiszone
                out.write_all(&le32(0))?; // sigfigs
                out.write_all(&le32(snaplen))?;
                out.write_all(&le32(LINKTYPE_ETHERNET as u32))?;
            }
            Format::Pcapng => {
                let mut shb = Vec::new();
                shb.extend_from_slice(&le32(0x1A2B_3C4D));
                shb.extend_from_slice(&le16(1));
                shb.extend_from_slice(&le16(0));
                shb.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
                let app = format!("bufferlab {}", env!("CARGO_PKG_VERSION"));
                option(&mut shb, 4, app.as_bytes()); // shb_userappl
                option(&mut shb, 0, &[]);
                block(&mut out, 0x0A0D_0D0A, &shb)?;
                let mut idb = Vec::new();
                idb.extend_from_slice(&le16(LINKTYPE_ETHERNET));
                idb.extend_from_slice(&le16(0));
                idb.extend_from_slice(&le32(snaplen));
                option(&mut idb, 2, if_name.as_bytes()); // if_name
                option(&mut idb, 9, &[9]); // if_tsresol: 10^-9 s
                option(&mut idb, 0, &[]);
                block(&mut out, 1, &idb)?;
            }
        }
        Ok(Writer {
            out,
            format,
            pad: [0; 4],
        })
    }

    /// One record: `t_ns` simulated time, `data` the captured bytes (already
    /// cut to the snap length), `orig_len` the frame's length on the wire.
    pub fn record(&mut self, t_ns: u64, data: &[u8], orig_len: u32) -> io::Result<()> {
        let caplen = data.len() as u32;
        match self.format {
            Format::Pcap | Format::PcapNs => {
                let sub = if self.format == Format::Pcap {
                    (t_ns % 1_000_000_000) / 1000
                } else {
                    t_ns % 1_000_000_000
                };
                self.out.write_all(&le32((t_ns / 1_000_000_000) as u32))?;
                self.out.write_all(&le32(sub as u32))?;
                self.out.write_all(&le32(caplen))?;
                self.out.write_all(&le32(orig_len))?;
                self.out.write_all(data)
            }
            Format::Pcapng => {
                let padded = data.len().next_multiple_of(4);
                let total = (32 + padded) as u32;
                self.out.write_all(&le32(6))?;
                self.out.write_all(&le32(total))?;
                self.out.write_all(&le32(0))?; // interface id
                self.out.write_all(&le32((t_ns >> 32) as u32))?;
                self.out.write_all(&le32(t_ns as u32))?;
                self.out.write_all(&le32(caplen))?;
                self.out.write_all(&le32(orig_len))?;
                self.out.write_all(data)?;
                self.out.write_all(&self.pad[..padded - data.len()])?;
                self.out.write_all(&le32(total))
            }
        }
    }

    /// Flush, and hand the output back.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcap_header_and_record_layout() {
        let mut w = Writer::create(Vec::new(), Format::Pcap, 128, "eth0").unwrap();
        w.record(2_500_001_000, &[0xaa; 60], 1514).unwrap();
        let b = w.finish().unwrap();
        assert_eq!(&b[0..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        assert_eq!(&b[16..20], &128u32.to_le_bytes());
        assert_eq!(&b[20..24], &1u32.to_le_bytes());
        assert_eq!(&b[24..28], &2u32.to_le_bytes(), "seconds");
        assert_eq!(&b[28..32], &500_001u32.to_le_bytes(), "microseconds");
        assert_eq!(&b[32..36], &60u32.to_le_bytes());
        assert_eq!(&b[36..40], &1514u32.to_le_bytes());
        assert_eq!(b.len(), 24 + 16 + 60);
    }

    #[test]
    fn pcapng_blocks_are_well_formed() {
        let mut w = Writer::create(Vec::new(), Format::Pcapng, 262144, "eth1").unwrap();
        w.record(5_000_000_007, &[1, 2, 3, 4, 5], 98).unwrap();
        let b = w.finish().unwrap();
        let u32at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let mut i = 0;
        let mut types = Vec::new();
        while i < b.len() {
            let (ty, len) = (u32at(i), u32at(i + 4) as usize);
            assert_eq!(len % 4, 0);
            assert_eq!(u32at(i + len - 4) as usize, len, "trailing length");
            types.push(ty);
            if ty == 6 {
                let t = ((u32at(i + 12) as u64) << 32) | u32at(i + 16) as u64;
                assert_eq!(t, 5_000_000_007);
                assert_eq!(u32at(i + 20), 5);
                assert_eq!(u32at(i + 24), 98);
            }
            i += len;
        }
        assert_eq!(types, vec![0x0A0D_0D0A, 1, 6]);
    }
}
