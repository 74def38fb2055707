/**
 * The real site of the end-to-end test: the Apache HTTP Server manual as
 * Debian ships it (package apache2-doc: ~250 English pages with CSS, JS and
 * images), and wget to crawl it. Found on the machine, or fetched with the
 * machine's apt into `.cache/` (no root needed for `apt-get download`;
 * `apt-get update` and `apt-get install wget` need root, which CI has).
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SYSTEM = '/usr/share/doc/apache2-doc/manual';
const CACHE = path.join(repo, '.cache', 'apache2-doc');
const CACHED = path.join(CACHE, 'root', 'usr/share/doc/apache2-doc/manual');

function run(cmd: string, args: string[], cwd?: string): void {
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });
}

/**
 * The folder of the Apache manual (`…/manual`, holding `en/`, `images/`,
 * `style/`).
 *
 * @throws with the apt error when it is neither installed, cached, nor
 *   downloadable.
 */
export function apacheManual(): string {
  for (const dir of [SYSTEM, CACHED]) if (existsSync(path.join(dir, 'en', 'index.html'))) return dir;
  const debDir = path.join(CACHE, 'deb');
  mkdirSync(debDir, { recursive: true });
  const download = () => run('apt-get', ['download', 'apache2-doc'], debDir);
  try {
    download();
  } catch {
    run('apt-get', ['update']); // a fresh machine may have no package lists yet
    download();
  }
  const deb = readdirSync(debDir).find((f) => f.startsWith('apache2-doc_') && f.endsWith('.deb'));
  if (!deb) throw new Error('apt-get download apache2-doc left no .deb in ' + debDir);
  run('dpkg-deb', ['-x', path.join(debDir, deb), path.join(CACHE, 'root')]);
  if (!existsSync(path.join(CACHED, 'en', 'index.html'))) throw new Error('apache2-doc has no manual/en/index.html');
  return CACHED;
}

/** Path of wget; installs Debian's wget when missing. */
export function wget(): string {
  const find = () => {
    try {
      return execFileSync('sh', ['-c', 'command -v wget'], { encoding: 'utf8' }).trim();
    } catch {
      return '';
    }
  };
  let p = find();
  if (!p) {
    try {
      run('apt-get', ['install', '-y', '-q', 'wget']);
    } catch {
      run('apt-get', ['update']);
      run('apt-get', ['install', '-y', '-q', 'wget']);
    }
    p = find();
  }
  if (!p) throw new Error('wget is not installed and apt-get could not install it');
  return p;
}

/**
 * `wget --mirror` of the English manual under `start` (its pages,
 * stylesheets and images) into `dir`: the mirror in `dir/mirror`, the WARC
 * file beside it, gzip per record unless `plain`.
 *
 * @returns the WARC file and how long the crawl took (ms)
 */
export async function crawlManual(wgetPath: string, start: string, dir: string, opts: { plain?: boolean } = {}): Promise<{ warc: string; ms: number }> {
  await mkdir(dir, { recursive: true });
  const warc = path.join(dir, 'crawl');
  const args = [
    '--mirror',
    '--page-requisites',
    '-e',
    'robots=off',
    '--no-verbose',
    '--no-proxy',
    '--include-directories=/manual/en,/manual/images,/manual/style',
  ];
  args.push('--directory-prefix', path.join(dir, 'mirror'), `--warc-file=${warc}`, ...(opts.plain ? ['--no-warc-compression'] : []), start);
  const started = performance.now();
  await promisify(execFile)(wgetPath, args, { maxBuffer: 64 * 1024 * 1024 }).catch((err: { code?: number }) => {
    // wget exits 8 when some link answered an error (the manual links a few missing files): the site, not the crawl.
    if (err.code !== 8) throw err;
  });
  return { ms: performance.now() - started, warc: warc + (opts.plain ? '.warc' : '.warc.gz') };
}
