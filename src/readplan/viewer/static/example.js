// tf.train.Example wire format parsed in the browser (specs/example.md, example.proto):
// Example{1: Features{1: map<string, Feature>}}, Feature{1: BytesList, 2: FloatList,
// 3: Int64List}, each list {1: repeated value}, packed or not.
"use strict";
(function (RP) {
  class WireError extends Error {}
  RP.WireError = WireError;

  function varint(b, at) {
    let value = 0n;
    let shift = 0n;
    for (let i = at.i; i < at.end; i++) {
      const byte = b[i];
      value |= BigInt(byte & 0x7f) << shift;
      shift += 7n;
      if (!(byte & 0x80)) {
        at.i = i + 1;
        if (shift > 70n) throw new WireError("varint longer than 10 bytes");
        return value;
      }
    }
    throw new WireError("varint runs past the end of its message");
  }
  const small = (b, at) => Number(varint(b, at));

  // Calls visit(field, wireType, start, end) for length-delimited fields, and
  // visit(field, wireType, value) for the others, over b[start:end].
  function fields(b, start, end, visit) {
    const at = { i: start, end: end };
    while (at.i < end) {
      const key = small(b, at);
      const field = key >>> 3;
      const type = key & 7;
      if (field === 0) throw new WireError("field number 0");
      if (type === 0) visit(field, type, varint(b, at));
      else if (type === 1) {
        if (at.i + 8 > end) throw new WireError("fixed64 runs past the end");
        visit(field, type, b.subarray(at.i, at.i + 8));
        at.i += 8;
      } else if (type === 5) {
        if (at.i + 4 > end) throw new WireError("fixed32 runs past the end");
        visit(field, type, b.subarray(at.i, at.i + 4));
        at.i += 4;
      } else if (type === 2) {
        const length = small(b, at);
        if (at.i + length > end) throw new WireError("length-delimited field runs past the end");
        visit(field, type, at.i, at.i + length);
        at.i += length;
      } else throw new WireError("unsupported wire type " + type);
    }
  }

  function floats(b, start, end, out) {
    const view = new DataView(b.buffer, b.byteOffset + start, end - start);
    if ((end - start) % 4) throw new WireError("packed floats not a multiple of 4 bytes");
    for (let k = 0; k < end - start; k += 4) out.push(view.getFloat32(k, true));
  }
  const signed = (v) => BigInt.asIntN(64, v);

  function list(b, start, end, kind) {
    const values = [];
    fields(b, start, end, (field, type, x, y) => {
      if (field !== 1) return;
      if (kind === "bytes") {
        if (type !== 2) throw new WireError("bytes value with wire type " + type);
        values.push(b.subarray(x, y));
      } else if (kind === "float") {
        if (type === 5) values.push(new DataView(x.buffer, x.byteOffset, 4).getFloat32(0, true));
        else if (type === 2) floats(b, x, y, values);
        else throw new WireError("float value with wire type " + type);
      } else if (type === 0) values.push(signed(x));
      else if (type === 2) {
        const at = { i: x, end: y };
        while (at.i < y) values.push(signed(varint(b, at)));
      } else throw new WireError("int64 value with wire type " + type);
    });
    return values;
  }

  const KINDS = { 1: "bytes", 2: "float", 3: "int64" };
  function feature(b, start, end) {
    let kind = null;
    let values = [];
    fields(b, start, end, (field, type, x, y) => {
      if (!KINDS[field] || type !== 2) return;
      // A oneof: another kind replaces the value; the same kind again merges (appends).
      const more = list(b, x, y, KINDS[field]);
      values = KINDS[field] === kind ? values.concat(more) : more;
      kind = KINDS[field];
    });
    return { kind: kind, values: values };
  }

  const decoder = new TextDecoder("utf-8", { fatal: true });
  // {key: {kind, values}} of one serialized Example; throws WireError when it is not one.
  RP.parseExample = function (b) {
    const out = {};
    fields(b, 0, b.length, (field, type, x, y) => {
      if (field !== 1 || type !== 2) return;
      fields(b, x, y, (f2, t2, p, q) => {
        if (f2 !== 1 || t2 !== 2) return;
        let key = "";
        let value = { kind: null, values: [] };
        fields(b, p, q, (f3, t3, r, s) => {
          if (t3 !== 2) return;
          if (f3 === 1) {
            try {
              key = decoder.decode(b.subarray(r, s));
            } catch (err) {
              throw new WireError("feature key is not UTF-8");
            }
          } else if (f3 === 2) value = feature(b, r, s);
        });
        out[key] = value;
      });
    });
    // A Feature holding no list is absent, as TensorFlow's parser (and readplan's) treat it.
    for (const key of Object.keys(out)) if (out[key].kind === null) delete out[key];
    return out;
  };

  // Feature keys, kinds and value counts over the head records, as `readplan inspect` gives.
  RP.featureSummary = function (head) {
    if (!head.length) return { features: null, features_note: "no examples decoded" };
    const features = {};
    for (let number = 0; number < head.length; number++) {
      let decoded;
      try {
        decoded = RP.parseExample(head[number]);
      } catch (err) {
        return {
          features: null,
          features_note: "record " + number + " is not a tf.train.Example (" + err.message + ")",
        };
      }
      for (const [key, value] of Object.entries(decoded)) {
        const kind = value.kind === "int64" ? "int64" : value.kind === "float" ? "float" : "bytes";
        const n = value.values.length;
        const entry = (features[key] = features[key] || {
          kind: kind,
          examples: 0,
          min_values: n,
          max_values: 0,
        });
        if (entry.kind !== kind) entry.kind = "mixed";
        entry.examples += 1;
        entry.min_values = Math.min(entry.min_values, n);
        entry.max_values = Math.max(entry.max_values, n);
      }
    }
    const sorted = {};
    for (const key of Object.keys(features).sort(byCodePoint)) sorted[key] = features[key];
    return { features: sorted, features_note: "over the first " + head.length + " examples" };
  };
  // Python sorts strings by code point; JavaScript's default sort compares UTF-16 units.
  function byCodePoint(a, b) {
    const x = Array.from(a);
    const y = Array.from(b);
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      const d = x[i].codePointAt(0) - y[i].codePointAt(0);
      if (d) return d;
    }
    return x.length - y.length;
  }

  const MAGIC = [
    ["image/png", [0x89, 0x50, 0x4e, 0x47]],
    ["image/jpeg", [0xff, 0xd8, 0xff]],
    ["image/gif", [0x47, 0x49, 0x46, 0x38]],
    ["image/bmp", [0x42, 0x4d]],
  ];
  // The MIME type of an encoded image held in bytes, or null.
  RP.imageType = function (bytes) {
    for (const [type, magic] of MAGIC) {
      if (bytes.length >= magic.length && magic.every((v, i) => bytes[i] === v)) return type;
    }
    const riff = bytes.length >= 12 && String.fromCharCode(...bytes.subarray(8, 12)) === "WEBP";
    return riff ? "image/webp" : null;
  };
  RP.text = function (bytes) {
    try {
      return decoder.decode(bytes);
    } catch (err) {
      return null;
    }
  };
})((window.RP = window.RP || {}));
