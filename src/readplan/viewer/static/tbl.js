// TBL v2 containers walked in the browser (specs/tbl.md §1-§6): header, index and every
// sample's CRC-16, LZ4 blocks decoded here. Damage kinds are readplan's.
"use strict";
(function (RP) {
  const HEADER = 64;
  const ENTRY = 24;
  const FORMATS = ["unknown", "jpeg", "png", "webp", "bmp", "tiff", "video_mp4", "video_avi", "raw_u8"];
  RP.TBL_FORMATS = FORMATS;

  // One LZ4 block (no frame) into exactly `size` bytes, or null when it does not decode so.
  RP.lz4Block = function (src, size) {
    const out = new Uint8Array(size);
    let i = 0;
    let o = 0;
    const more = () => {
      let n = 0;
      let b;
      do {
        if (i >= src.length) return -1;
        b = src[i++];
        n += b;
      } while (b === 255);
      return n;
    };
    while (i < src.length) {
      const token = src[i++];
      let literals = token >> 4;
      if (literals === 15) {
        const extra = more();
        if (extra < 0) return null;
        literals += extra;
      }
      if (i + literals > src.length || o + literals > size) return null;
      out.set(src.subarray(i, i + literals), o);
      i += literals;
      o += literals;
      if (i === src.length) break;
      if (i + 2 > src.length) return null;
      const distance = src[i] | (src[i + 1] << 8);
      i += 2;
      let match = (token & 15) + 4;
      if (match === 19) {
        const extra = more();
        if (extra < 0) return null;
        match += extra;
      }
      if (distance === 0 || distance > o || o + match > size) return null;
      for (let k = 0; k < match; k++, o++) out[o] = out[o - distance];
    }
    return o === size ? out : null;
  };

  function fatal(result, kind, offset) {
    result.damage.push(RP.event(kind, offset, 0, null));
    result.fatal = kind;
    return result;
  }

  // The first index problem of each entry (specs/tbl.md §6, second table).
  function entryKinds(entries, size, indexEnd, payloadEnd, fileCompressed) {
    const kinds = entries.map((e) => {
      const end = e.offset + e.size;
      if (end > size) return "truncated_data";
      if (e.offset < indexEnd || end > payloadEnd) return "index_bounds";
      const compressed = (e.flags & 1) === 1;
      if (
        e.format >= FORMATS.length ||
        (e.flags & ~7) !== 0 ||
        (!compressed && e.usize !== e.size) ||
        (compressed && e.usize > 255 * e.size) ||
        (compressed && !fileCompressed)
      ) {
        return "index_field";
      }
      return null;
    });
    const sound = entries.map((e, i) => i).filter((i) => kinds[i] === null);
    sound.sort((a, b) => entries[a].offset - entries[b].offset || a - b);
    let reach = -1;
    sound.forEach((i, k) => {
      const e = entries[i];
      if (k > 0 && e.offset < reach) kinds[i] = "index_overlap";
      reach = Math.max(reach, e.offset + e.size);
    });
    return kinds;
  }

  RP.walkTbl = async function (file, opts, progress) {
    const src = new RP.SliceSource(file);
    const result = RP.newResult(file, null);
    result.container = "tbl";
    result.formats = {};
    result.compressed_samples = 0;
    result.samples_with_metadata = 0;
    result.stored_bytes = 0;
    if (src.size < HEADER) return fatal(result, "truncated_header", 0);
    const h = (await src.read(0, HEADER)).slice();
    if (RP.u32(h, 0) !== 0x024c4254 || RP.u32(h, 4) !== 2) return fatal(result, "bad_magic", 0);
    const stored = RP.u32(h, 44);
    h.fill(0, 44, 48);
    if (RP.crc32(h) !== stored) return fatal(result, "header_crc", 44);
    const n = RP.u64(h, 8);
    const flags = RP.u32(h, 40);
    const indexEnd = HEADER + ENTRY * n;
    if (RP.u32(h, 16) !== indexEnd) return fatal(result, "header_field", 16);
    if (indexEnd > src.size) return fatal(result, "truncated_header", 8);
    if (flags & ~7) return fatal(result, "header_field", 40);
    const metaOffset = RP.u64(h, 24);
    const metaSize = RP.u64(h, 32);
    if (!(flags & 2) && (metaOffset || metaSize)) return fatal(result, "header_field", 24);
    let payloadEnd = src.size;
    if (flags & 2) {
      if (metaOffset < indexEnd) result.damage.push(RP.event("metadata_overrun", 24, 0, null));
      else if (metaOffset + metaSize > src.size) {
        result.damage.push(RP.event("truncated_data", src.size, 0, null));
      } else payloadEnd = metaOffset;
    }
    result.compression = flags & 1 ? "lz4" : null;
    const index = await src.read(HEADER, ENTRY * n);
    const entries = [];
    for (let i = 0; i < n; i++) {
      const o = ENTRY * i;
      entries.push({
        offset: RP.u64(index, o),
        size: RP.u32(index, o + 8),
        usize: RP.u32(index, o + 12),
        width: index[o + 16] | (index[o + 17] << 8),
        height: index[o + 18] | (index[o + 19] << 8),
        format: index[o + 20],
        flags: index[o + 21],
        crc: index[o + 22] | (index[o + 23] << 8),
      });
    }
    const kinds = entryKinds(entries, src.size, indexEnd, payloadEnd, (flags & 1) === 1);
    // As `readplan inspect` counts: every sample of the header; sizes, formats and flags of
    // the samples whose index entry is sound; damaged payloads are listed as damage.
    result.records = n;
    result.tbl_entries = [];
    for (let i = 0; i < n; i++) {
      progress.offset = entries[i].offset;
      const e = entries[i];
      if (kinds[i] !== null) {
        result.damage.push(RP.event(kinds[i], HEADER + ENTRY * i, i, null, { records_lost: 1 }));
        continue;
      }
      const format = FORMATS[e.format];
      result.formats[format] = (result.formats[format] || 0) + 1;
      if (e.flags & 1) result.compressed_samples += 1;
      if (e.flags & 2) result.samples_with_metadata += 1;
      result.stored_bytes += e.size;
      result.lengths.push(e.usize);
      const raw = await src.read(e.offset, e.size);
      const data = e.flags & 1 ? RP.lz4Block(raw, e.usize) : raw;
      if (data === null) {
        result.damage.push(RP.event("lz4", e.offset, i, null, { records_lost: 1 }));
        continue;
      }
      if (flags & 4 && RP.crc16(data) !== e.crc) {
        result.damage.push(RP.event("data_crc", e.offset, i, null, { records_lost: 1 }));
        continue;
      }
      if (result.head.length < opts.examples) {
        result.tbl_entries.push(e);
        result.head.push(data.slice());
      }
      if (opts.yieldEvery && i % opts.yieldEvery === 0) await opts.pause();
    }
    return result;
  };
})((window.RP = window.RP || {}));
