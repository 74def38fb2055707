/**
 * Search and phrase history with the index in PostgreSQL (`storage.index`,
 * a throwaway server, test/helpers/postgres.ts): the same sample site as
 * search.test.ts gives the same answers as with SQLite (the snippets are
 * each engine's own), and a bad query is the same 400. Without the
 * PostgreSQL server binaries this test fails, saying what to install.
 */
import t from 'tap';
import { request, startArchive } from '../../helpers/archive.js';
import { startPostgres } from '../../helpers/postgres.js';
import { json, load, PHRASE, RULES } from './helpers.js';

const q = (s: string) => encodeURIComponent(s);
const ASKED = [
  `/search?q=${q('never sell')}&output=json`,
  `/search?q=${q(`"${PHRASE}"`)}&output=json`,
  `/search?q=${q('sell*')}&output=json`,
  `/search?q=service&output=json&from=2025&to=2025`,
  `/search?q=never&output=json&url=${q('http://www.example.org/terms')}`,
  `/search?q=zebra&output=json`,
  `/search?q=giraffe&output=json`,
  `/search?q=sellotape&type=text/plain&output=json`,
  `/search?q=never&output=json&page=5`,
  `/history?q=${q(`"${PHRASE}"`)}&url=${q('http://www.example.org/*')}&output=json`,
];

t.test('PostgreSQL full-text search answers as SQLite’s does', async (t) => {
  // A server that cannot start rejects: the test fails with its message.
  const server = await startPostgres();
  t.teardown(() => server.stop());
  const lite = await startArchive(RULES);
  t.teardown(() => lite.close());
  const onPg = await startArchive(`storage:\n  index: ${await server.database('search')}\n${RULES}`);
  t.teardown(() => onPg.close());
  await load(lite);
  await load(onPg);
  const norm = (body: Record<string, unknown>, base: string) =>
    JSON.parse(JSON.stringify(body).replaceAll(base, 'BASE'), (k, v) => (k === 'snippet' ? typeof v : v));
  for (const path of ASKED) {
    const a = await json(lite, path);
    const b = await json(onPg, path);
    t.equal(b.status, 200, path);
    t.same(norm(b.body, onPg.url), norm(a.body, lite.url), `the same answer: ${path}`);
  }
  const hit = (await json(onPg, `/search?q=${q('never sell')}&output=json`)).body.hits[0];
  t.match(hit.snippet, /never sell/i, 'a snippet around the words');
  const bad = await request(`${onPg.url}/search?q=${q('AND OR (')}`);
  t.equal(bad.status, 400);
});
