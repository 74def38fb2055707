/**
 * Searching a URL of this machine under one of its loopback names
 * (`127.0.0.1`, `localhost`, `[::1]`) when a capture proxy filed the
 * captures under another one (its vhost's canonical name, as the shipped
 * sample files `http://127.0.0.1:8080/` under `http://localhost:8080/`):
 * the "Not archived" page and an empty listing lead to the canonical
 * history, and say nothing of captures the access rules hide.
 */
import t from 'tap';
import { request, startArchive } from '../helpers/archive.js';
import { seed } from '../conformance/helpers.js';

const HTML = { accept: 'text/html' };

t.test('a search for 127.0.0.1:8080 leads to the captures filed under localhost:8080', async (t) => {
  const a = await startArchive(`archives:
  - id: current
access:
  - url: http://localhost:8080/private/*
    action: exclude
`);
  t.teardown(() => a.close());
  await seed(a, 'http://localhost:8080/', 'Mon, 05 Jan 2026 12:00:00 GMT');
  await seed(a, 'http://localhost:8080/', 'Tue, 06 Jan 2026 12:00:00 GMT');
  await seed(a, 'http://localhost:8080/private/a', 'Tue, 06 Jan 2026 12:00:00 GMT');

  const search = await request(`${a.url}/web/search?q=${encodeURIComponent('127.0.0.1:8080')}`, { headers: HTML });
  t.equal(search.status, 302);
  const page = await request(a.url + new URL(String(search.headers.location), a.url).pathname, { headers: HTML });
  t.equal(page.status, 404, 'nothing is filed under 127.0.0.1:8080');
  t.match(page.text, /<h1>Not archived<\/h1>/);
  t.match(page.text, /This machine has captures of it under another name/);
  const offered = [...page.text.matchAll(/<ul class="same-machine">([\s\S]*?)<\/ul>/g)].flatMap((m) => [
    ...m[1].matchAll(/<a href="([^"]*)">([^<]*)<\/a> \(([^)]*)\)/g),
  ]);
  t.same(
    offered.map((m) => [m[1], m[2], m[3]]),
    [[`${a.url}/web/*/http://localhost:8080/`, 'http://localhost:8080/', '2 captures']],
    'a link to the calendar of the same URL under localhost, with its count',
  );
  const calendar = await request(offered[0][1], { headers: HTML });
  t.equal(calendar.status, 200, 'which is its history');
  t.match(calendar.text, /<strong>2 captures<\/strong>/);

  const replay = await request(`${a.url}/web/2026/http://[::1]:8080/`, { headers: HTML });
  t.equal(replay.status, 404, 'the replay page of another loopback name');
  t.match(replay.text, /href="[^"]*\/web\/\*\/http:\/\/localhost:8080\/">http:\/\/localhost:8080\/<\/a> \(2 captures\)/, 'offers it too');

  const hidden = await request(`${a.url}/web/*/http://127.0.0.1:8080/private/a`, { headers: HTML });
  t.equal(hidden.status, 404);
  t.notMatch(hidden.text, /same-machine|localhost/, 'a capture the access rules exclude is not offered');

  const listing = await request(`${a.url}/web/*/http://127.0.0.1:8080/*`, { headers: HTML });
  t.equal(listing.status, 404, 'no URL under http://127.0.0.1:8080/');
  t.match(
    listing.text,
    new RegExp(`<a href="${a.url}/web/\\*/http://localhost:8080/\\*">http://localhost:8080/\\*</a> \\(1 URL\\)`),
    'the listing under localhost:8080 is offered (the excluded URL not counted)',
  );
  t.equal((await request(`${a.url}/web/*/http://localhost:8080/*`, { headers: HTML })).status, 200, 'and has URLs');

  const elsewhere = await request(`${a.url}/web/*/http://www.example.org/`, { headers: HTML });
  t.equal(elsewhere.status, 404);
  t.notMatch(elsewhere.text, /same-machine/, 'another host: no such offer');
});

t.test('a Memento address of 127.0.0.1:8080 gives a browser the same "Not archived" page, with the offer', async (t) => {
  const a = await startArchive(`archives:
  - id: current
`);
  t.teardown(() => a.close());
  await seed(a, 'http://localhost:8080/', 'Mon, 05 Jan 2026 12:00:00 GMT');

  const uriM = `${a.url}/current/memento/20260105120000/http://127.0.0.1:8080/`;
  const page = await request(uriM, { headers: HTML });
  t.equal(page.status, 404, 'nothing is filed under 127.0.0.1:8080');
  t.match(page.headers['content-type'], /^text\/html/);
  t.match(page.text, /<h1>Not archived<\/h1>/);
  t.match(
    page.text,
    new RegExp(`<ul class="same-machine">\\s*<li><a href="${a.url}/web/\\*/http://localhost:8080/">http://localhost:8080/</a> \\(1 capture\\)</li>`),
    'the calendar of the same URL under localhost is offered, as on the /web/ pages',
  );
  const client = await request(uriM);
  t.equal(client.status, 404);
  t.equal(client.text, 'no memento of http://127.0.0.1:8080/ in any archive\n', 'a client that asks for no page gets the one line');
});
