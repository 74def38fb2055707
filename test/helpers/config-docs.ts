/**
 * The settings tables of docs/configuration.md, generated from the config
 * schemas (the one place each key's default and meaning live).
 * `npm run docs:config` writes them between that file's
 * `<!-- config:<name> -->` and `<!-- /config:<name> -->` markers;
 * test/repo/docs.test.ts fails when the page and the schemas drift apart.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ARCHIVE_FILE_SCHEMA } from '../../archive/config.js';
import { WITNESS_FILE_SCHEMA } from '../../archive/evidence/witness-config.js';
import { PROXY_FILE_SCHEMA } from '../../proxy/config/proxy-file.js';
import { VHOST_SCHEMA } from '../../proxy/config/vhost-file.js';
import { type ConfigSchema, settingsTable } from '#shared/config-schema.js';
import { repo } from './daemons.js';

/** The page the tables are written into, relative to the repository. */
export const CONFIG_DOC = 'docs/configuration.md';

/** The generated tables by marker name. */
export function configTables(): Record<string, string> {
  return {
    archive: settingsTable(ARCHIVE_FILE_SCHEMA as ConfigSchema),
    proxy: settingsTable(PROXY_FILE_SCHEMA as ConfigSchema),
    vhost: settingsTable(VHOST_SCHEMA as ConfigSchema, 'setting'),
    witness: settingsTable(WITNESS_FILE_SCHEMA as ConfigSchema),
  };
}

/** `text` with each marked section replaced by its table. @throws when a marker pair is missing. */
export function withTables(text: string, tables: Record<string, string>): string {
  let out = text;
  for (const [name, table] of Object.entries(tables)) {
    const open = `<!-- config:${name} -->\n`;
    const close = `<!-- /config:${name} -->`;
    const a = out.indexOf(open);
    const b = out.indexOf(close);
    if (a < 0 || b < a) throw new Error(`${CONFIG_DOC} has no ${open.trim()} … ${close} section`);
    out = out.slice(0, a + open.length) + table + out.slice(b);
  }
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const file = path.join(repo, CONFIG_DOC);
  const text = readFileSync(file, 'utf8');
  if (!process.argv.includes('--write')) process.stdout.write(Object.values(configTables()).join('\n'));
  else {
    const updated = withTables(text, configTables());
    if (updated !== text) writeFileSync(file, updated);
    process.stdout.write(`${CONFIG_DOC}: ${updated === text ? 'tables already current' : 'tables updated'}\n`);
  }
}
