// A directory tree as one gzip'd tar, both ways (Node only): files.upload()
// packs with packTree(), files.download() unpacks with unpackInto().
//
// Written here on node:zlib rather than taken from npm because the client has
// no dependencies. Only what the sandbox API sends and takes: regular files
// and directories. Packing writes POSIX ustar, with a pax header for a name
// that does not fit ustar's 100 + 155 bytes; unpacking reads ustar, pax and
// GNU long names, and refuses anything that could land outside the target
// directory or be more than a file or a directory.

import fs from "node:fs/promises";
import { constants as fsc } from "node:fs";
import nodePath from "node:path";
import zlib from "node:zlib";

const BLOCK = 512;
// ustar's 12-byte size field holds 11 octal digits.
const USTAR_SIZE_MAX = 0o77777777777;
// How deep packTree() walks: past it is a mistake (or a loop of bind mounts).
const DEPTH_MAX = 64;

const utf8 = new TextEncoder();

function octal(buf, off, width, value) {
  const digits = value.toString(8).padStart(width - 1, "0");
  if (digits.length > width - 1) throw new RangeError(`tar: ${value} does not fit ${width - 1} octal digits`);
  buf.write(digits, off, "latin1");
  buf[off + width - 1] = 0;
}

/** One 512-byte ustar header; name and prefix are bytes that fit. */
function header({ name, prefix = Buffer.alloc(0), mode, size, mtime, type }) {
  const h = Buffer.alloc(BLOCK);
  name.copy(h, 0);
  octal(h, 100, 8, mode);
  octal(h, 108, 8, 0); // uid: the sandbox's user owns what it unpacks
  octal(h, 116, 8, 0); // gid
  octal(h, 124, 12, size);
  octal(h, 136, 12, mtime);
  h.write(type, 156, "latin1");
  h.write("ustar\0", 257, "latin1");
  h.write("00", 263, "latin1");
  prefix.copy(h, 345);
  h.fill(0x20, 148, 156); // the checksum is summed with its own field as spaces
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148, "latin1");
  return h;
}

/**
 * ustar's name and prefix for `name` (a prefix of at most 155 bytes, a "/",
 * a name of at most 100), or null when no split fits.
 */
function splitUstar(name) {
  if (name.length <= 100) return { name, prefix: Buffer.alloc(0) };
  for (let i = Math.min(name.length - 1, 155); i > 0; i--) {
    if (name[i] !== 0x2f) continue;
    if (name.length - i - 1 > 100) break; // a shorter prefix leaves a longer name
    if (name.length - i - 1 > 0) return { name: name.subarray(i + 1), prefix: name.subarray(0, i) };
  }
  return null;
}

/** A pax record "LEN key=value\n", LEN counting its own digits. */
function paxRecord(key, value) {
  const body = Buffer.concat([Buffer.from(` ${key}=`), value, Buffer.from("\n")]);
  let n = body.length + 1;
  while (String(n).length + body.length !== n) n = String(n).length + body.length;
  return Buffer.concat([Buffer.from(String(n)), body]);
}

function padding(size) {
  return Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);
}

function ascii(bytes) {
  return Buffer.from(bytes.map((b) => (b >= 0x20 && b < 0x7f ? b : 0x5f)));
}

/** The header blocks of one entry: ustar, preceded by a pax header if the name needs one. */
function entryHeaders(rel, { mode, size, mtime, type }) {
  const name = Buffer.from(utf8.encode(rel));
  const split = splitUstar(name);
  if (split) return [header({ ...split, mode, size, mtime, type })];
  // hdrcharset=BINARY: the name's bytes as they are (they are UTF-8), so
  // the reader converts nothing to its own locale.
  const pax = Buffer.concat([paxRecord("hdrcharset", Buffer.from("BINARY")), paxRecord("path", name)]);
  // The names in the ustar headers are only for readers without pax:
  // ASCII, so that no reader has anything to convert.
  const tail = ascii(name.subarray(name.length - 80));
  return [
    header({
      name: Buffer.concat([Buffer.from("PaxHeaders/"), tail]),
      mode: 0o644,
      size: pax.length,
      mtime,
      type: "x",
    }),
    pax,
    padding(pax.length),
    header({ name: tail, mode, size, mtime, type }),
  ];
}

/**
 * The tree under localDir as a gzip'd ustar, names relative to it; regular
 * files (mode 0755 when any execute bit is set, else 0644) and directories
 * (0755) only. A symbolic link or a special file anywhere in it rejects,
 * naming it, before anything is sent.
 *
 * @param {string} localDir
 * @returns {Promise<{ gz: Uint8Array, files: number, bytes: number }>}
 */
export async function packTree(localDir) {
  const root = String(localDir);
  const top = await fs.stat(root); // the top itself may be a link to a directory
  if (!top.isDirectory()) throw new Error(`upload: ${root} is not a directory`);
  const chunks = [];
  let files = 0;
  let bytes = 0;
  const walk = async (dir, rel, depth) => {
    if (depth > DEPTH_MAX) throw new Error(`upload: ${dir} nests deeper than ${DEPTH_MAX} directories`);
    const names = await fs.readdir(dir);
    names.sort();
    for (const name of names) {
      const src = nodePath.join(dir, name);
      const relName = rel + name;
      const st = await fs.lstat(src);
      const mtime = Math.max(0, Math.floor(st.mtimeMs / 1000));
      if (st.isDirectory()) {
        chunks.push(...entryHeaders(relName + "/", { mode: 0o755, size: 0, mtime, type: "5" }));
        await walk(src, relName + "/", depth + 1);
        continue;
      }
      if (!st.isFile()) {
        const what = st.isSymbolicLink() ? "a symbolic link" : "a special file";
        throw new Error(`upload: ${src} is ${what}, not a regular file or a directory`);
      }
      // Opened without following a link: what is read is what lstat saw.
      const fh = await fs.open(src, fsc.O_RDONLY | fsc.O_NOFOLLOW);
      let data;
      try {
        const fst = await fh.stat();
        if (!fst.isFile()) throw new Error(`upload: ${src} changed while it was read`);
        if (fst.size > USTAR_SIZE_MAX) throw new Error(`upload: ${src} is ${fst.size} bytes; a file is at most 8 GiB`);
        data = await fh.readFile();
      } finally {
        await fh.close();
      }
      const mode = st.mode & 0o111 ? 0o755 : 0o644;
      chunks.push(...entryHeaders(relName, { mode, size: data.length, mtime, type: "0" }), data, padding(data.length));
      files++;
      bytes += data.length;
    }
  };
  await walk(root, "", 0);
  chunks.push(Buffer.alloc(2 * BLOCK)); // the end: two zero blocks
  const gz = zlib.gzipSync(Buffer.concat(chunks));
  return { gz: new Uint8Array(gz.buffer, gz.byteOffset, gz.byteLength), files, bytes };
}

// ---- unpacking ----

class BadArchive extends Error {}

function field(h, off, width) {
  const end = h.indexOf(0, off);
  return h.subarray(off, end < 0 || end > off + width ? off + width : end);
}

function number(h, off, width, what) {
  if (h[off] & 0x80) {
    // GNU base-256: a big-endian number after the flag bit.
    let n = 0;
    for (let i = off; i < off + width; i++) n = n * 256 + (i === off ? h[i] & 0x7f : h[i]);
    if (!Number.isSafeInteger(n)) throw new BadArchive(`${what} is too large`);
    return n;
  }
  const text = field(h, off, width).toString("latin1").trim();
  if (text === "") return 0;
  if (!/^[0-7]+$/.test(text)) throw new BadArchive(`${what} is not a number: ${JSON.stringify(text)}`);
  return parseInt(text, 8);
}

function checksumOk(h) {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i];
  return number(h, 148, 8, "checksum") === sum;
}

function parsePax(data) {
  const out = {};
  let i = 0;
  while (i < data.length) {
    const sp = data.indexOf(0x20, i);
    if (sp < 0) throw new BadArchive("a pax record without a length");
    const len = Number(data.subarray(i, sp).toString("latin1"));
    if (!Number.isInteger(len) || len <= sp - i || i + len > data.length || data[i + len - 1] !== 0x0a) {
      throw new BadArchive("a pax record's length is wrong");
    }
    const rec = data.subarray(sp + 1, i + len - 1);
    const eq = rec.indexOf(0x3d);
    if (eq < 0) throw new BadArchive("a pax record without '='");
    out[rec.subarray(0, eq).toString("utf8")] = rec.subarray(eq + 1);
    i += len;
  }
  return out;
}

/**
 * The parts of an entry's name relative to the target, or null for the
 * target itself ("." or "./"). Absolute names, "..", NUL and backslashes
 * (a separator elsewhere) are refused.
 */
function safeParts(name) {
  if (name === "" || name.startsWith("/") || name.includes("\0") || name.includes("\\")) {
    throw new BadArchive(`entry ${JSON.stringify(name)}: not a relative path`);
  }
  const parts = name.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.includes("..")) throw new BadArchive(`entry ${JSON.stringify(name)}: leaves the directory ('..')`);
  return parts.length ? parts : null;
}

/**
 * The entries of a plain tar: { name, type ("0" a file, "5" a directory),
 * mode, data }, each checked (relative, no "..", a file or a directory);
 * throws BadArchive, naming the entry, at the first that is not.
 */
function entriesOf(tar) {
  const out = [];
  let pending = {}; // what a pax or GNU header says of the next entry
  for (let off = 0; ; ) {
    if (off + BLOCK > tar.length) throw new BadArchive("the archive ends without its end blocks");
    const h = tar.subarray(off, off + BLOCK);
    if (h.every((b) => b === 0)) return out;
    if (!checksumOk(h)) throw new BadArchive(`the header at byte ${off} has a wrong checksum`);
    let type = String.fromCharCode(h[156] || 0x30);
    const size = pending.size ?? number(h, 124, 12, "size");
    const body = off + BLOCK;
    if (body + size > tar.length) throw new BadArchive("the archive ends inside an entry");
    const data = tar.subarray(body, body + size);
    off = body + Math.ceil(size / BLOCK) * BLOCK;
    if (type === "x") {
      const pax = parsePax(data);
      if (pax.path) pending.name = pax.path.toString("utf8");
      if (pax.size) {
        pending.size = Number(pax.size.toString("latin1"));
        if (!Number.isSafeInteger(pending.size) || pending.size < 0) throw new BadArchive("a pax size is not a number");
      }
      continue;
    }
    if (type === "L") {
      pending.name = field(data, 0, data.length).toString("utf8");
      continue;
    }
    if (type === "g") continue; // global pax: nothing here applies to names
    let name = pending.name;
    if (name === undefined) {
      name = field(h, 0, 100).toString("utf8");
      if (field(h, 257, 6).toString("latin1") === "ustar") {
        const prefix = field(h, 345, 155).toString("utf8");
        if (prefix) name = `${prefix}/${name}`;
      }
    }
    pending = {};
    if (type === "7") type = "0"; // contiguous: a regular file to everyone else
    if (type !== "0" && type !== "5") {
      throw new BadArchive(`entry ${JSON.stringify(name)}: type '${type}' is not a file or a directory`);
    }
    const parts = safeParts(name);
    if (!parts && type === "0") throw new BadArchive(`entry ${JSON.stringify(name)}: a file in the directory's place`);
    if (parts) out.push({ parts, type, mode: number(h, 100, 8, "mode"), data });
  }
}

/**
 * Unpack a gzip'd (or plain) tar into localDir, made if missing. Every
 * entry is checked before anything is written (relative, no "..", a
 * regular file or a directory), else BadArchive names it; a file is opened
 * without following a link already in its place. Files get 0755 when any
 * execute bit is set, else 0644.
 *
 * @param {Uint8Array} data the archive as the server sent it
 * @param {string} localDir
 * @returns {Promise<number>} how many files were written
 */
export async function unpackInto(data, localDir) {
  let tar = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (tar[0] === 0x1f && tar[1] === 0x8b) {
    try {
      tar = zlib.gunzipSync(tar);
    } catch (err) {
      throw new BadArchive(`not a gzip stream: ${err.message}`);
    }
  }
  const entries = entriesOf(tar);
  const root = String(localDir);
  await fs.mkdir(root, { recursive: true });
  let files = 0;
  for (const { parts, type, mode, data: content } of entries) {
    const dst = nodePath.join(root, ...parts);
    if (type === "5") {
      await fs.mkdir(dst, { recursive: true });
      continue;
    }
    await fs.mkdir(nodePath.dirname(dst), { recursive: true });
    const perm = mode & 0o111 ? 0o755 : 0o644;
    const fh = await fs.open(dst, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC | fsc.O_NOFOLLOW, perm);
    try {
      await fh.writeFile(content);
      await fh.chmod(perm); // a file that was there keeps its mode otherwise
    } finally {
      await fh.close();
    }
    files++;
  }
  return files;
}

export { BadArchive };
