#!/usr/bin/env node
/**
 * Draws the archive's icon (archive/web/static/favicon.ico, served at
 * `/favicon.ico`): a clock face in white on the pages' dark blue, in a
 * rounded square; 16 and 32 pixels square, each a PNG inside the ICO.
 * Run it again after changing the drawing: `node bin/make-favicon.js`.
 */
import { writeFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';

const BLUE = [0x12, 0x3a, 0x63];
const WHITE = [0xff, 0xff, 0xff];
/** Samples per pixel along each axis (anti-aliasing). */
const SS = 4;

/** The colour at (x, y) in a 1×1 square: null outside the icon. */
function colourAt(x, y) {
  const r = 0.18;
  const qx = Math.max(Math.abs(x - 0.5) - (0.5 - r), 0);
  const qy = Math.max(Math.abs(y - 0.5) - (0.5 - r), 0);
  if (qx * qx + qy * qy > r * r) return null;
  const dx = x - 0.5;
  const dy = y - 0.5;
  const d = Math.hypot(dx, dy);
  if (d > 0.3 && d < 0.39) return WHITE;
  // Hands: to 12 o'clock and to 4 o'clock.
  const onSegment = (ax, ay, w) => {
    const t = Math.max(0, Math.min(1, (dx * ax + dy * ay) / (ax * ax + ay * ay)));
    return Math.hypot(dx - t * ax, dy - t * ay) < w;
  };
  if (onSegment(0, -0.22, 0.045) || onSegment(0.15, 0.087, 0.045)) return WHITE;
  return BLUE;
}

/** RGBA pixels of the icon at `size` pixels square. */
function pixels(size) {
  const out = Buffer.alloc(size * size * 4);
  for (let py = 0; py < size; py++)
    for (let px = 0; px < size; px++) {
      const sum = [0, 0, 0, 0];
      for (let sy = 0; sy < SS; sy++)
        for (let sx = 0; sx < SS; sx++) {
          const c = colourAt((px + (sx + 0.5) / SS) / size, (py + (sy + 0.5) / SS) / size);
          if (!c) continue;
          for (let i = 0; i < 3; i++) sum[i] += c[i];
          sum[3] += 1;
        }
      const o = (py * size + px) * 4;
      for (let i = 0; i < 3; i++) out[o + i] = sum[3] ? Math.round(sum[i] / sum[3]) : 0;
      out[o + 3] = Math.round((255 * sum[3]) / (SS * SS));
    }
  return out;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/** A PNG (8-bit RGBA, no filter) of the icon at `size`. */
function png(size) {
  const rgba = pixels(size);
  const raw = Buffer.alloc(size * (size * 4 + 1));
  for (let y = 0; y < size; y++) rgba.copy(raw, y * (size * 4 + 1) + 1, y * size * 4, (y + 1) * size * 4);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr.set([8, 6, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** An ICO file holding one PNG per size. */
function ico(sizes) {
  const images = sizes.map(png);
  const head = Buffer.alloc(6 + 16 * sizes.length);
  head.writeUInt16LE(0, 0);
  head.writeUInt16LE(1, 2);
  head.writeUInt16LE(sizes.length, 4);
  let offset = head.length;
  sizes.forEach((size, i) => {
    const e = 6 + 16 * i;
    head[e] = size % 256;
    head[e + 1] = size % 256;
    head.writeUInt16LE(1, e + 4);
    head.writeUInt16LE(32, e + 6);
    head.writeUInt32LE(images[i].length, e + 8);
    head.writeUInt32LE(offset, e + 12);
    offset += images[i].length;
  });
  return Buffer.concat([head, ...images]);
}

const file = new URL('../archive/web/static/favicon.ico', import.meta.url);
writeFileSync(file, ico([16, 32]));
if (process.argv.includes('--png')) writeFileSync(process.argv[process.argv.indexOf('--png') + 1], png(128));
