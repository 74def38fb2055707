/** A sample site changed over time, for the tests of /search and /history. */
import { captureRecord, putCapture, request, type TestArchive, TWO_ARCHIVES } from '../../helpers/archive.js';
import { until } from '../../helpers/until.js';

export const RULES = `${TWO_ARCHIVES}access:\n  - url: http://www.example.org/excluded/*\n    action: exclude\n`;
export const PHRASE = 'we never sell your data';
const page = (title: string, text: string, extra = '') =>
  `<!doctype html><html><head><title>${title}</title><style>.zebrastyle{}</style><script>var zebra = "scripted words";</script></head>` +
  `<body><!-- giraffe in a comment --><h1>${title}</h1><p>${text}</p>${extra}</body></html>`;

const TERMS_V1 = page('Terms of service', `Plain terms. ${PHRASE}. Ask us anything.`);
const TERMS_V2 = page('Terms of service', 'Plain terms. We may share what you give us. Ask us anything.');

/** Captures of the sample site over time: [path, date, body, content type]. */
const CAPTURES: [string, string, string, string?][] = [
  ['/terms', 'Wed, 15 Jan 2025 10:00:00 GMT', TERMS_V1],
  ['/terms', 'Sat, 15 Feb 2025 10:00:00 GMT', TERMS_V1], // the same page again: a revisit
  ['/terms', 'Tue, 15 Jul 2025 10:00:00 GMT', TERMS_V2],
  ['/terms', 'Sun, 15 Mar 2026 10:00:00 GMT', TERMS_V1],
  ['/about', 'Mon, 20 Jan 2025 10:00:00 GMT', page('About us', `Founded long ago. ${PHRASE}, says the founder.`)],
  ['/excluded/secret', 'Mon, 20 Jan 2025 10:00:00 GMT', page('Secret', `${PHRASE} (hidden page)`)],
  ['/markup', 'Mon, 20 Jan 2025 11:00:00 GMT', page('Markup &lt;b&gt;', 'stored &lt;script&gt;alert(1)&lt;/script&gt; markup words')],
  ['/notes.txt', 'Mon, 20 Jan 2025 12:00:00 GMT', 'plain text notes about sellotape and data', 'text/plain'],
  ['/image.png', 'Mon, 20 Jan 2025 12:00:00 GMT', 'never sell binary', 'image/png'],
];

/** PUTs every capture of the sample site, then waits until the texts are indexed (`texts` of them). */
export async function load(a: TestArchive, texts = 7): Promise<void> {
  for (const [target, date, body, type] of CAPTURES) {
    const r = await putCapture(a, '', captureRecord({ target, date, body, responseHeaders: [['Content-Type', type ?? 'text/html; charset=utf-8']] }));
    if (r.status !== 201) throw new Error(`${target} ${date}: ${r.status} ${r.text}`);
  }
  await until(async () => (await a.app.textIndexer.drained(), (await a.store.index.text!.count()) >= texts), 20_000, 'the texts are indexed');
}

/** GET `path`: status, type and the parsed JSON of a 200. */
export async function json(a: TestArchive, path: string) {
  const r = await request(a.url + path);
  return { status: r.status, type: r.headers['content-type'], body: r.status === 200 ? JSON.parse(r.text) : undefined, text: r.text };
}
