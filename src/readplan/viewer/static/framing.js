// TFRecord framing walked in the browser (specs/viewer.md §2, specs/tfrecord.md §1-§5).
// Files are read in slices (Blob.slice), never whole; compressed files are streamed
// through DecompressionStream. Damage kinds and offsets are those of readplan's
// CorruptionReport in skip mode.
"use strict";
(function (RP) {
  const WINDOW = 1 << 20;
  const MAX_RECORD_BYTES = 2 ** 31 - 1;
  const MAX_COMPRESSED_RECORD_BYTES = 2 ** 28;

  // ------------------------------------------------------------------ checksums
  function table(poly) {
    const t = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ poly : c >>> 1;
      t[n] = c >>> 0;
    }
    return t;
  }
  const CASTAGNOLI = table(0x82f63b78);
  const ZLIB = table(0xedb88320);

  // `previous`: the CRC of the bytes before these, to continue it.
  function crcWith(t, bytes, start, end, previous) {
    let c = (previous ^ 0xffffffff) >>> 0;
    for (let i = start; i < end; i++) c = t[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  }
  RP.crc32c = (bytes, start = 0, end = bytes.length) => crcWith(CASTAGNOLI, bytes, start, end, 0);
  RP.crc32 = (bytes, start = 0, end = bytes.length, previous = 0) =>
    crcWith(ZLIB, bytes, start, end, previous);
  RP.mask = (c) => ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
  RP.crc16 = function (bytes, start = 0, end = bytes.length) {
    let c = 0xffff;
    for (let i = start; i < end; i++) {
      c ^= bytes[i];
      for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xa001 : c >>> 1;
    }
    return c;
  };

  const u32 = (b, o) => (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;
  const u64 = (b, o) => u32(b, o) + u32(b, o + 4) * 4294967296; // exact below 2**53
  RP.u32 = u32;
  RP.u64 = u64;

  // ------------------------------------------------------------------ sources
  // Random access over a Blob, one cached window at a time.
  class SliceSource {
    constructor(blob) {
      this.blob = blob;
      this.size = blob.size;
      this.start = 0;
      this.bytes = new Uint8Array(0);
    }
    async read(offset, length) {
      const end = Math.min(this.size, offset + length);
      if (offset >= this.start && end <= this.start + this.bytes.length) {
        return this.bytes.subarray(offset - this.start, end - this.start);
      }
      if (end - offset > WINDOW) {
        return new Uint8Array(await this.blob.slice(offset, end).arrayBuffer());
      }
      this.start = offset;
      const stop = Math.min(this.size, offset + WINDOW);
      this.bytes = new Uint8Array(await this.blob.slice(offset, stop).arrayBuffer());
      return this.bytes.subarray(0, end - offset);
    }
  }
  RP.SliceSource = SliceSource;

  // A sequential reader over a ReadableStream of Uint8Array chunks.
  class StreamSource {
    // `limit`: the bytes that may be read (those confirmed); the rest are never delivered.
    constructor(stream, limit) {
      this.reader = stream.getReader();
      this.chunks = [];
      this.have = 0;
      this.done = false;
      this.error = null;
      this.pos = 0;
      this.limit = limit;
    }
    cancel() {
      this.reader.cancel().catch(() => {});
    }
    async fill(n) {
      n = Math.min(n, this.limit - this.pos);
      while (this.have < n && !this.done) {
        let step;
        try {
          step = await this.reader.read();
        } catch (err) {
          this.error = err;
          this.done = true;
          break;
        }
        if (step.done) this.done = true;
        else if (step.value.length) {
          this.chunks.push(step.value);
          this.have += step.value.length;
        }
      }
      return Math.min(n, this.have);
    }
    take(n) {
      const first = this.chunks[0];
      if (first && first.length >= n) {
        // Within one chunk: a view, no copy (chunks are never written again).
        this.chunks[0] = first.subarray(n);
        if (!this.chunks[0].length) this.chunks.shift();
        this.have -= n;
        this.pos += n;
        return first.subarray(0, n);
      }
      const out = new Uint8Array(n);
      let filled = 0;
      while (filled < n) {
        const head = this.chunks[0];
        const part = Math.min(head.length, n - filled);
        out.set(head.subarray(0, part), filled);
        filled += part;
        if (part === head.length) this.chunks.shift();
        else this.chunks[0] = head.subarray(part);
      }
      this.have -= n;
      this.pos += n;
      return out;
    }
  }

  // Blob.slice pieces as a stream (never the whole file at once), counting bytes read.
  function sliceStream(blob, progress, start = 0, stop = blob.size) {
    let offset = start;
    return new ReadableStream({
      async pull(controller) {
        if (offset >= stop) {
          controller.close();
          return;
        }
        const end = Math.min(stop, offset + WINDOW);
        const piece = new Uint8Array(await blob.slice(offset, end).arrayBuffer());
        offset = end;
        progress.compressed = offset;
        controller.enqueue(piece);
      },
    });
  }

  // ------------------------------------------------------------------ detection
  function headerVerifies(b, o) {
    return u32(b, o + 8) === RP.mask(RP.crc32c(b, o, o + 8));
  }
  function zlibHeader(b) {
    return b.length >= 2 && (b[0] & 0x0f) === 8 && b[0] >> 4 <= 7 && ((b[0] << 8) | b[1]) % 31 === 0;
  }
  // specs/tfrecord.md §3.2 "auto": a verified header wins, then GZIP, then ZLIB.
  RP.detect = async function (blob) {
    const b = new Uint8Array(await blob.slice(0, 12).arrayBuffer());
    if (b.length === 4 && b[0] === 0x54 && b[1] === 0x42 && b[2] === 0x4c && b[3] === 2) return "tbl";
    if (b.length >= 4 && u32(b, 0) === 0x024c4254) return "tbl";
    if (b.length >= 12 && headerVerifies(b, 0)) return null;
    if (b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b) return "GZIP";
    if (zlibHeader(b)) return "ZLIB";
    return null;
  };

  // ------------------------------------------------------------------ results
  function newResult(file, compression) {
    return {
      name: file.name,
      container: "tfrecord",
      compression: compression,
      file_bytes: file.size,
      records: 0,
      lengths: new Sizes(),
      head: [],
      damage: [],
    };
  }
  class Sizes {
    constructor() {
      this.values = new Float64Array(1024);
      this.length = 0;
    }
    push(v) {
      if (this.length === this.values.length) {
        const grown = new Float64Array(this.values.length * 2);
        grown.set(this.values);
        this.values = grown;
      }
      this.values[this.length++] = v;
    }
    array() {
      return this.values.subarray(0, this.length);
    }
  }
  RP.Sizes = Sizes;
  function event(kind, offset, recordIndex, resume, extra) {
    const e = {
      kind: kind,
      offset: offset,
      record_index: recordIndex,
      resume_offset: resume,
      bytes_skipped: resume === null ? null : resume - offset,
      records_lost: null,
      compressed_offset: null,
    };
    return Object.assign(e, extra || {});
  }
  function deliver(result, data, headCount) {
    result.records += 1;
    result.lengths.push(data.length);
    if (result.head.length < headCount) result.head.push(data.slice());
  }

  // ------------------------------------------------------------------ uncompressed
  // A verified frame at p: both CRCs, within the cap and the file.
  async function verifiedFrameAt(src, p, max) {
    const h = await src.read(p, 12);
    if (h.length < 12 || !headerVerifies(h, 0)) return false;
    const length = u64(h, 0);
    if (length > max || p + 16 + length > src.size) return false;
    const d = await src.read(p + 12, length + 4);
    return u32(d, length) === RP.mask(RP.crc32c(d, 0, length));
  }
  // Frames from p chain to exactly the end of the file (data CRCs not needed).
  async function chainsToEnd(src, p, max, broken) {
    const walked = [];
    let q = p;
    while (q < src.size) {
      if (broken.has(q)) break;
      walked.push(q);
      const h = await src.read(q, 12);
      if (h.length < 12 || !headerVerifies(h, 0)) break;
      const length = u64(h, 0);
      if (length > max || q + 16 + length > src.size) break;
      q += 16 + length;
    }
    if (q === src.size && walked.length) return true;
    for (const w of walked) broken.add(w);
    return false;
  }
  // specs/tfrecord.md §5.1: the first p > o holding a verified frame that chains to the end.
  async function resync(src, o, max, broken, progress) {
    for (let base = o + 1; base + 12 <= src.size; base += WINDOW - 11) {
      const w = await src.read(base, WINDOW);
      for (let i = 0; i + 12 <= w.length; i++) {
        if (u32(w, i + 8) !== RP.mask(RP.crc32c(w, i, i + 8))) continue;
        const p = base + i;
        if (broken.has(p)) continue;
        if ((await verifiedFrameAt(src, p, max)) && (await chainsToEnd(src, p, max, broken))) return p;
      }
      progress.offset = base;
    }
    return null;
  }

  async function walkPlain(file, opts, progress) {
    const src = new SliceSource(file);
    const result = newResult(file, null);
    const max = opts.maxRecordBytes ?? MAX_RECORD_BYTES;
    const broken = new Set();
    let pos = 0;
    let index = 0;
    while (pos < src.size) {
      progress.offset = pos;
      const left = src.size - pos;
      if (left < 12) {
        result.damage.push(event("truncated_header", pos, index, src.size));
        break;
      }
      const h = await src.read(pos, 12);
      let kind = null;
      let length = 0;
      if (!headerVerifies(h, 0)) kind = "header_crc";
      else {
        length = u64(h, 0);
        if (length > max) kind = "absurd_length";
        else if (pos + 16 + length > src.size) kind = "truncated_data";
      }
      if (kind === null) {
        const d = await src.read(pos + 12, length + 4);
        if (u32(d, length) !== RP.mask(RP.crc32c(d, 0, length))) {
          result.damage.push(event("data_crc", pos, index, pos + 16 + length, { records_lost: 1 }));
        } else deliver(result, d.subarray(0, length), opts.examples);
        index += 1;
        pos += 16 + length;
        if (opts.yieldEvery && index % opts.yieldEvery === 0) await opts.pause();
        continue;
      }
      const resume = await resync(src, pos, max, broken, progress);
      if (resume === null) {
        const final = kind === "header_crc" ? "trailing_garbage" : kind;
        result.damage.push(event(final, pos, index, src.size));
        break;
      }
      result.damage.push(event(kind, pos, index, resume));
      pos = resume;
    }
    return result;
  }

  // ------------------------------------------------------------------ compressed
  // specs/tfrecord.md §3.2 and §5.2: records come only from bytes the stream's own
  // checksums confirm (gzip's CRC-32 and ISIZE, zlib's Adler-32, which the browser's
  // decompressor checks at the end), and a compressed stream stops at its first damage.
  function streamKind(err) {
    const text = String(err && err.message ? err.message : err);
    if (/junk|trailing|after end/i.test(text)) return "trailing_garbage";
    if (/truncat|unexpected end|premature/i.test(text)) return "truncated_stream";
    return "inflate";
  }
  function inflated(file, compression, progress, start = 0, stop = file.size) {
    const format = compression === "GZIP" ? "gzip" : "deflate";
    const pieces = sliceStream(file, progress, start, stop);
    return pieces.pipeThrough(new DecompressionStream(format));
  }
  // The members' inflated bytes one after another (concatenated GZIP members are one
  // stream, as in TensorFlow); `starts` are their compressed offsets.
  function members(file, compression, progress, starts) {
    let k = 0;
    let reader = null;
    return new ReadableStream({
      async pull(controller) {
        for (;;) {
          if (reader === null) {
            if (k === starts.length) return controller.close();
            const stop = k + 1 < starts.length ? starts[k + 1] : file.size;
            reader = inflated(file, compression, progress, starts[k++], stop).getReader();
          }
          let step;
          try {
            step = await reader.read();
          } catch (err) {
            return controller.error(err);
          }
          if (!step.done) return controller.enqueue(step.value);
          reader = null;
        }
      },
      cancel() {
        if (reader) reader.cancel().catch(() => {});
      },
    });
  }
  // Where the member that inflated to `size` bytes with CRC-32 `crc` ends, when another
  // GZIP member follows it: its trailer (CRC-32, ISIZE) then `1f 8b 08`. -1 if none does.
  async function nextMember(file, from, crc, size) {
    const want = new Uint8Array(11);
    new DataView(want.buffer).setUint32(0, crc, true);
    new DataView(want.buffer).setUint32(4, size % 4294967296, true);
    want.set([0x1f, 0x8b, 0x08], 8);
    const src = new SliceSource(file);
    for (let base = from; base + 11 <= file.size; base += WINDOW - 10) {
      const w = await src.read(base, WINDOW);
      for (let i = w.indexOf(want[0]); i >= 0 && i + 11 <= w.length; i = w.indexOf(want[0], i + 1)) {
        if (want.every((v, j) => w[i + j] === v)) return base + i + 8;
      }
    }
    return -1;
  }
  // The first pass: how many inflated bytes are confirmed (members whose trailer the
  // browser's decompressor verified), the members' offsets, and the damage after them.
  async function confirmed(file, compression, progress) {
    const starts = [0];
    let total = 0;
    for (;;) {
      const member = await confirmMember(file, compression, progress, starts[starts.length - 1]);
      if (member.kind === null) return { bytes: total + member.bytes, kind: null, starts: starts };
      if (member.kind !== "trailing_garbage") return { bytes: total, kind: member.kind, starts: starts };
      total += member.bytes;
      const next = compression === "GZIP" ? await nextMember(file, starts[starts.length - 1] + 18, member.crc, member.bytes) : -1;
      if (next < 0) return { bytes: total, kind: "trailing_garbage", starts: starts };
      starts.push(next);
    }
  }
  // One member: its inflated size and CRC-32, or the damage that stopped it. Bytes after a
  // verified member (trailing garbage, or another member) leave it confirmed; any other
  // error leaves none of it confirmed.
  async function confirmMember(file, compression, progress, start) {
    const reader = inflated(file, compression, progress, start).getReader();
    let bytes = 0;
    let crc = 0;
    for (;;) {
      let step;
      try {
        step = await reader.read();
      } catch (err) {
        const kind = streamKind(err);
        return { bytes: kind === "trailing_garbage" ? bytes : 0, crc: crc, kind: kind };
      }
      if (step.done) return { bytes: bytes, crc: crc, kind: null };
      bytes += step.value.length;
      if (compression === "GZIP") crc = RP.crc32(step.value, 0, step.value.length, crc);
    }
  }
  async function walkCompressed(file, compression, opts, progress) {
    const result = newResult(file, compression);
    const checked = await confirmed(file, compression, progress);
    const stream = members(file, compression, progress, checked.starts);
    const src = new StreamSource(stream, checked.bytes);
    const max = opts.maxRecordBytes ?? MAX_COMPRESSED_RECORD_BYTES;
    let index = 0;
    let at = 0;
    const stop = (kind) => {
      const ev = event(kind, at, index, null, { compressed_offset: progress.compressed || 0 });
      result.damage.push(ev);
    };
    for (;;) {
      at = src.pos;
      progress.offset = at;
      const got = await src.fill(12);
      if (got === 0) {
        if (checked.kind) stop(checked.kind);
        break;
      }
      if (got < 12) {
        stop("truncated_header");
        break;
      }
      const h = src.take(12);
      if (!headerVerifies(h, 0)) {
        stop("header_crc");
        break;
      }
      const length = u64(h, 0);
      if (length > max) {
        stop("absurd_length");
        break;
      }
      if ((await src.fill(length + 4)) < length + 4) {
        stop("truncated_data");
        break;
      }
      const d = src.take(length + 4);
      if (u32(d, length) !== RP.mask(RP.crc32c(d, 0, length))) {
        stop("data_crc");
        break;
      }
      deliver(result, d.subarray(0, length), opts.examples);
      index += 1;
      if (opts.yieldEvery && index % opts.yieldEvery === 0) await opts.pause();
    }
    src.cancel();
    return result;
  }

  // ------------------------------------------------------------------ entry point
  // Walks one file (a File or Blob with a name); returns counts, sizes, head records, damage.
  RP.walk = async function (file, options) {
    const opts = Object.assign({ examples: 100, yieldEvery: 4096 }, options || {});
    opts.pause = () => new Promise((resolve) => setTimeout(resolve, 0));
    const progress = opts.progress || {};
    const compression = opts.compression === undefined ? await RP.detect(file) : opts.compression;
    if (compression === "tbl") return RP.walkTbl(file, opts, progress);
    if (compression === null || compression === "") return walkPlain(file, opts, progress);
    return walkCompressed(file, compression, opts, progress);
  };
  RP.KINDS = [
    "absurd_length",
    "data_crc",
    "header_crc",
    "inflate",
    "trailing_garbage",
    "truncated_data",
    "truncated_header",
    "truncated_stream",
  ];
  RP.newResult = newResult;
  RP.event = event;
  RP.deliver = deliver;
})((window.RP = window.RP || {}));
