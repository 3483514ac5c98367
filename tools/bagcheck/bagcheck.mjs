// Read MCAP files the way the Foxglove app does and print every decoded message as JSON.
//
// Usage: node bagcheck.mjs FILE.mcap [FILE.mcap ...]
//
// Each file is opened with @mcap/core's indexed reader (the summary and message index that Foxglove
// uses to seek), chunks are decompressed with Foxglove's wasm zstd / lz4, each channel's ros2msg
// schema is parsed by @foxglove/rosmsg (`parse(text, {ros2: true})`) and its CDR messages decoded
// by @foxglove/rosmsg2-serialization's MessageReader: the same three steps as Foxglove's channel
// parser. Output (stdout, one JSON document):
//   {"files": [{"path", "profile", "library", "channels": [{"topic", "schema", "encoding",
//               "metadata", "error"}], "messages": [{"topic", "log_time", "publish_time",
//               "trailing": bool, "msg"}]}]}
// A channel whose schema does not parse gets "error" (the parser's message) and no messages.
// Typed arrays longer than 64 elements are summarised as {"length", "sha256"} (of their bytes);
// bigints become strings. Exit status 0 when every file was read, 1 on an unreadable file.

import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import { McapIndexedReader } from "@mcap/core";
import { parse } from "@foxglove/rosmsg";
import { MessageReader } from "@foxglove/rosmsg2-serialization";
import zstd from "@foxglove/wasm-zstd";
import lz4 from "@foxglove/wasm-lz4";

/** A readable over a file handle, as @mcap/core's indexed reader wants it. */
function fileReadable(handle, size) {
  return {
    size: async () => BigInt(size),
    read: async (offset, length) => {
      const buf = new Uint8Array(Number(length));
      await handle.read(buf, 0, Number(length), Number(offset));
      return buf;
    },
  };
}

/** JSON-friendly copy of a decoded message. */
function plain(value) {
  if (typeof value === "bigint") return value.toString();
  if (ArrayBuffer.isView(value)) {
    if (value.length > 64) {
      const bytes = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
      return { length: value.length, sha256: createHash("sha256").update(bytes).digest("hex") };
    }
    return Array.from(value, plain);
  }
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = plain(v);
    return out;
  }
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  return value;
}

async function readFile(path, decompressHandlers) {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    const reader = await McapIndexedReader.Initialize({ readable: fileReadable(handle, size), decompressHandlers });
    const readers = new Map();
    const channels = [];
    for (const ch of reader.channelsById.values()) {
      const schema = reader.schemasById.get(ch.schemaId);
      const entry = { topic: ch.topic, schema: schema?.name ?? null, encoding: schema?.encoding ?? null, metadata: Object.fromEntries(ch.metadata), error: null };
      try {
        if (schema?.encoding !== "ros2msg" || ch.messageEncoding !== "cdr") {
          throw new Error(`unsupported schema/message encoding ${schema?.encoding}/${ch.messageEncoding}`);
        }
        const definitions = parse(new TextDecoder().decode(schema.data), { ros2: true });
        readers.set(ch.id, new MessageReader(definitions));
      } catch (err) {
        entry.error = String(err.message ?? err);
      }
      channels.push(entry);
    }
    const messages = [];
    for await (const m of reader.readMessages()) {
      const r = readers.get(m.channelId);
      if (r === undefined) continue;
      const msg = r.readMessage(m.data);
      messages.push({
        topic: reader.channelsById.get(m.channelId).topic,
        log_time: m.logTime.toString(),
        publish_time: m.publishTime.toString(),
        trailing: r.lastReadHadTrailingBytes(),
        msg: plain(msg),
      });
    }
    return { path, profile: reader.header.profile, library: reader.header.library, channels, messages };
  } finally {
    await handle.close();
  }
}

async function main() {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    process.stderr.write("usage: node bagcheck.mjs FILE.mcap [FILE.mcap ...]\n");
    process.exit(2);
  }
  await zstd.isLoaded;
  await lz4.isLoaded;
  const decompressHandlers = {
    zstd: (buffer, decompressedSize) => zstd.decompress(buffer, Number(decompressedSize)),
    lz4: (buffer, decompressedSize) => lz4(buffer, Number(decompressedSize)),
  };
  const out = { files: [] };
  let status = 0;
  for (const f of files) {
    try {
      out.files.push(await readFile(f, decompressHandlers));
    } catch (err) {
      out.files.push({ path: f, error: String(err.message ?? err) });
      status = 1;
    }
  }
  process.stdout.write(JSON.stringify(out));
  process.exitCode = status;
}

await main();
