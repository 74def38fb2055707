/**
 * The vhost table: the vhosts of every file in the vhosts folder, looked up
 * by the host name of a request's `Host` (RFC 9110 §7.2; case-insensitive,
 * port and trailing dot ignored), with the `default: true` vhost as the
 * fallback. The folder is watched (chokidar): a file that fails to load
 * keeps its last good vhosts serving (at start: serves nothing, and the
 * others serve); vhost objects are frozen and a reload swaps in a new
 * table, so a request in flight keeps its vhost.
 */
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { type FSWatcher, watch } from 'chokidar';
import { ConfigError } from '#shared/config.js';
import { clashOf, isVhostFileName, listVhostFiles, loadVhostFile, type Vhost } from './config/vhost-file.js';
import { type Logger, silentLogger } from './log.js';

/** What one (re)load of one vhost file did; the payload of the `'reload'` event. */
export interface ReloadEvent {
  /** Absolute path of the file. */
  file: string;
  /** `true`: the file's new vhosts serve now (or it was removed). `false`: it was rejected, its last good config serves. */
  ok: boolean;
  /** The file was deleted; its vhosts no longer serve. */
  removed?: boolean;
  /** For a rejected file: `file:line: reason`. */
  error?: string;
  /** Host names the file serves after this event. */
  names: string[];
}

export interface VhostRegistryOptions {
  log?: Logger;
  /** Watch the folder and hot-reload (default `true`). */
  watch?: boolean;
  /**
   * How long a changed file must stay the same size before it is read, in
   * ms (so that a file still being written is not read half-way); default 100.
   */
  settleMs?: number;
}

/**
 * The host name in a `Host` header value: lower-case, without port,
 * brackets or trailing dot (`WWW.Example.org:8080` → `www.example.org`,
 * `[::1]:80` → `::1`). `undefined` for a missing or empty header.
 */
function hostNameOf(hostHeader: string | undefined): string | undefined {
  if (!hostHeader) return undefined;
  let h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end > 1 ? h.slice(1, end) : undefined;
  }
  const colon = h.indexOf(':');
  if (colon >= 0) h = h.slice(0, colon);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h || undefined;
}

/**
 * The vhosts of one folder, with the Host table built from them.
 *
 * Events: `'reload'` ({@link ReloadEvent}) after each file is (re)read or
 * removed, once the table is updated.
 */
export class VhostRegistry extends EventEmitter {
  /** Absolute path of the vhosts folder. */
  readonly dir: string;
  private readonly log: Logger;
  /** Last good vhosts of each file. */
  private readonly files = new Map<string, Vhost[]>();
  /** The refusal (`file:line: reason`) of each file whose version on disk does not load. */
  private readonly refused = new Map<string, string>();
  private table = new Map<string, Vhost>();
  private fallback: Vhost | undefined;
  private watcher: FSWatcher | undefined;
  private closed = false;

  private constructor(dir: string, log: Logger) {
    super();
    this.dir = dir;
    this.log = log;
  }

  /**
   * Loads every `*.yaml`/`*.yml` file of `dir` and, unless `watch: false`,
   * starts watching it; resolves once the watcher is ready. Each file goes
   * through {@link loadFile}, as on a reload: a file that does not load is
   * logged with `file:line: reason` and serves nothing, the others serve
   * (start and reload accept and refuse the same files, so a file a reload
   * refused never stops the next start).
   *
   * @throws ConfigError when `dir` does not exist.
   */
  static async open(dir: string, options: VhostRegistryOptions = {}): Promise<VhostRegistry> {
    const abs = path.resolve(dir);
    if (!existsSync(abs)) throw new ConfigError(`${abs}: vhosts folder does not exist`);
    const reg = new VhostRegistry(abs, options.log ?? silentLogger);
    for (const file of listVhostFiles(abs)) reg.readFile(file, true);
    if (reg.files.size === 0) reg.log({ level: 'warn', msg: 'no vhost files serve; every request gets 421 until one is added', dir: abs });
    if (options.watch !== false) await reg.startWatching(options.settleMs ?? 100);
    return reg;
  }

  /**
   * The vhost for a request's `Host` header value, or the default vhost, or
   * `undefined` (the caller answers 421).
   */
  lookup(hostHeader: string | undefined): Vhost | undefined {
    const name = hostNameOf(hostHeader);
    return (name !== undefined ? this.table.get(name) : undefined) ?? this.fallback;
  }

  /** Files whose version on disk is refused (at start: they serve nothing; after a reload: their last good vhosts serve), each with its `file:line: reason`. */
  get rejectedFiles(): ReadonlyMap<string, string> {
    return this.refused;
  }

  /** Every vhost that serves now, by file name then file order. */
  get vhosts(): Vhost[] {
    return [...this.files.keys()].sort().flatMap((f) => this.files.get(f)!);
  }

  /**
   * Reads the folder again (SIGHUP): removed files drop out, every other
   * file is read as on a change. Never throws; a bad file keeps its last
   * good config and is reported in its event.
   */
  reload(): ReloadEvent[] {
    const present = new Set(existsSync(this.dir) ? listVhostFiles(this.dir) : []);
    const events: ReloadEvent[] = [];
    for (const file of new Set([...this.files.keys(), ...this.refused.keys()])) if (!present.has(file)) events.push(this.removeFile(file));
    for (const file of [...present].sort()) events.push(this.loadFile(file));
    return events;
  }

  /**
   * Reads one file (at start, on a change, on SIGHUP) and, if it loads,
   * replaces its vhosts; if not, its last good vhosts (none at start) keep
   * serving and the refusal is logged with `file:line: reason`. A file is
   * refused when it is not a regular file or is larger than 64 KiB, when
   * its YAML is bad or expands too many aliases (shared/config.ts
   * `loadYamlFile`), when a vhost in it is bad (`loadVhostFile`), or when
   * it claims a host name another file serves, or a second default.
   * Emits and returns the {@link ReloadEvent}; never throws.
   */
  loadFile(file: string): ReloadEvent {
    return this.readFile(file, false);
  }

  /** {@link loadFile}; `atStart`: a file that loads is not logged (the proxy's first line is the one saying where it listens). */
  private readFile(file: string, atStart: boolean): ReloadEvent {
    const abs = path.resolve(file);
    let event: ReloadEvent;
    try {
      const vhosts = this.check(abs, loadVhostFile(abs));
      this.files.set(abs, vhosts);
      this.refused.delete(abs);
      this.rebuild();
      event = { file: abs, ok: true, names: vhosts.flatMap((v) => [...v.names]) };
      if (!atStart) this.log({ msg: 'vhost file loaded', file: abs, names: event.names });
      for (const line of vhosts.flatMap((v) => v.obsolete ?? [])) this.log({ level: 'warn', msg: 'obsolete setting ignored', file: abs, error: line });
    } catch (err) {
      // Anything else a hostile file provokes refuses that file too: it never stops the proxy.
      const error = err instanceof ConfigError ? err.message : `${abs}: cannot load: ${(err as Error)?.message ?? String(err)}`;
      const kept = this.files.get(abs) ?? [];
      this.refused.set(abs, error);
      event = { file: abs, ok: false, error, names: kept.flatMap((v) => [...v.names]) };
      this.log({
        level: 'error',
        msg: kept.length ? 'vhost file rejected; its last good config keeps serving' : 'vhost file rejected; it serves nothing',
        error,
        file: abs,
      });
    }
    this.emit('reload', event);
    return event;
  }

  /** Drops the vhosts of a removed file. Emits and returns the {@link ReloadEvent}. */
  removeFile(file: string): ReloadEvent {
    const abs = path.resolve(file);
    this.files.delete(abs);
    this.refused.delete(abs);
    this.rebuild();
    const event: ReloadEvent = { file: abs, ok: true, removed: true, names: [] };
    this.log({ msg: 'vhost file removed; its vhosts no longer serve', file: abs });
    this.emit('reload', event);
    return event;
  }

  /** Stops watching (resolves once the watcher is closed, so the process can exit). Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const w = this.watcher;
    this.watcher = undefined;
    if (w) await w.close();
  }

  /** Rejects vhosts that clash with another file's: a host name already served, or a second default. */
  private check(file: string, vhosts: Vhost[]): Vhost[] {
    for (const [other, theirs] of this.files) {
      if (other === file) continue;
      for (const t of theirs) {
        for (const v of vhosts) {
          const clash = clashOf(v, t);
          if (clash) throw new ConfigError(clash);
        }
      }
    }
    return vhosts;
  }

  private rebuild(): void {
    const table = new Map<string, Vhost>();
    let fallback: Vhost | undefined;
    for (const v of this.vhosts) {
      for (const n of v.names) if (!table.has(n)) table.set(n, v);
      if (v.isDefault && !fallback) fallback = v;
    }
    this.table = table;
    this.fallback = fallback;
  }

  private async startWatching(settleMs: number): Promise<void> {
    const watcher = watch(this.dir, {
      ignoreInitial: true,
      depth: 0,
      awaitWriteFinish: settleMs > 0 ? { stabilityThreshold: settleMs, pollInterval: Math.max(10, Math.floor(settleMs / 4)) } : false,
      ignored: (p: string, stats?: { isFile(): boolean }) => Boolean(stats?.isFile()) && !isVhostFileName(p),
    });
    this.watcher = watcher;
    const onFile = (p: string) => {
      if (this.closed || path.dirname(path.resolve(p)) !== this.dir || !isVhostFileName(p)) return;
      this.loadFile(p);
    };
    watcher.on('add', onFile);
    watcher.on('change', onFile);
    watcher.on('unlink', (p: string) => {
      if (this.closed || !(this.files.has(path.resolve(p)) || this.refused.has(path.resolve(p)))) return;
      this.removeFile(p);
    });
    watcher.on('error', (err: unknown) =>
      this.log({ level: 'error', msg: 'watching the vhosts folder failed', dir: this.dir, error: String((err as Error)?.message ?? err) }),
    );
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  }
}
