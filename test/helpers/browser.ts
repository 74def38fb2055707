/**
 * A real browser for tests of what a person sees: Debian's Chromium
 * (`apt-get install -y chromium`, which `.ci/run` does; no browser is
 * downloaded) driven by puppeteer-core, headless. Screenshots go to
 * `test-output/screenshots/` (gitignored) so that a person can look at
 * them; pixelmatch compares two of them.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pixelmatch from 'pixelmatch';
import { PNG } from 'pngjs';
import puppeteer, { type Browser } from 'puppeteer-core';
import { repo } from './daemons.js';

/** Where screenshots are kept (gitignored). */
export const SCREENSHOT_DIR = path.join(repo, 'test-output', 'screenshots');

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

/**
 * Launches headless Chromium with a fixed window, no background traffic
 * (no updates, no safe browsing, no sync: nothing leaves 127.0.0.1), and
 * makes sure the screenshot folder exists (tests run in any order, two at
 * a time: none removes it).
 *
 * @param extraArgs more Chromium switches
 * @throws when Debian's chromium is not installed, saying how to install it
 */
export async function launchBrowser(extraArgs: string[] = []): Promise<Browser> {
  const executablePath = CHROMIUM.find((p) => existsSync(p));
  if (!executablePath) throw new Error('no Chromium at /usr/bin/chromium: apt-get install -y chromium (as .ci/run does)');
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return puppeteer.launch({
    executablePath,
    headless: true,
    defaultViewport: { width: 1024, height: 768 },
    args: [
      '--no-sandbox', // tests run as root
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-default-apps',
      '--disable-sync',
      '--no-first-run',
      '--no-default-browser-check',
      '--metrics-recording-only',
      '--safebrowsing-disable-auto-update',
      '--font-render-hinting=none',
      // No name leaves the machine: every host name but loopback's fails to resolve (Chromium asks for its own
      // services, e.g. clients2.google.com, even with background networking off). The rules apply to IP
      // literals too, so the loopback addresses tests use are excluded by name; a test may give its own rules.
      ...(extraArgs.some((a) => a.startsWith('--host-resolver-rules=')) ? [] : [`--host-resolver-rules=${LOOPBACK_ONLY}`]),
      ...extraArgs,
    ],
  });
}

/** Chromium's `--host-resolver-rules` that resolve loopback names and addresses only. */
const LOOPBACK_ONLY = [
  'MAP * ~NOTFOUND',
  'EXCLUDE localhost',
  'EXCLUDE *.localhost',
  'EXCLUDE 127.0.0.1',
  'EXCLUDE 127.0.0.2',
  'EXCLUDE 127.0.0.3',
  'EXCLUDE [::1]',
].join(', ');

/** The result of comparing two screenshots. */
export interface PixelDiff {
  /** Pixels that differ (pixelmatch, threshold 0.1, anti-aliasing ignored). */
  differing: number;
  total: number;
  /** `differing / total`, in percent. */
  percent: number;
}

/**
 * Compares two PNG screenshots of the same size pixel by pixel and writes
 * the difference image (differing pixels in red) to `diffFile`.
 *
 * @throws when the sizes differ
 */
export function comparePng(a: Buffer, b: Buffer, diffFile: string): PixelDiff {
  const pa = PNG.sync.read(a);
  const pb = PNG.sync.read(b);
  if (pa.width !== pb.width || pa.height !== pb.height) throw new Error(`screenshots differ in size: ${pa.width}×${pa.height} and ${pb.width}×${pb.height}`);
  const diff = new PNG({ width: pa.width, height: pa.height });
  const differing = pixelmatch(pa.data, pb.data, diff.data, pa.width, pa.height, { threshold: 0.1 });
  mkdirSync(path.dirname(diffFile), { recursive: true });
  writeFileSync(diffFile, PNG.sync.write(diff));
  const total = pa.width * pa.height;
  return { differing, total, percent: (100 * differing) / total };
}
