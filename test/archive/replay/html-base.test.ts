import t, { type Test } from 'tap';
import { isHtml, SCAN_BYTES, withBaseElement, withBaseElementBuffer } from '../../../archive/replay/html-base.js';

const URI_R = 'http://a.example/';
const TAG = `<base href="${URI_R}">`;
const b = (s: string) => Buffer.from(s, 'latin1');

async function* chunks(body: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < body.length; i += size) yield new Uint8Array(body.subarray(i, i + size));
}

/** withBaseElement fed `body` in chunks of `size` bytes, collected. */
async function streamed(body: Buffer, size: number, uriR = URI_R): Promise<{ added: number; body: Buffer }> {
  const r = await withBaseElement(chunks(body, size), uriR);
  const out: Buffer[] = [];
  for await (const c of r.body) out.push(c);
  return { added: r.added, body: Buffer.concat(out) };
}

/** Asserts that both functions, the stream fed in several chunk sizes, turn `page` into `want`. */
async function gives(t: Test, page: string | Buffer, want: string | Buffer, name: string): Promise<void> {
  const input = typeof page === 'string' ? b(page) : page;
  const expected = typeof want === 'string' ? b(want) : want;
  const added = expected.length - input.length;
  const whole = withBaseElementBuffer(input, URI_R);
  t.equal(whole.body.toString('latin1'), expected.toString('latin1'), `${name} (buffer)`);
  t.equal(whole.added, added, `${name} (buffer): added`);
  for (const size of [1, 3, 16, Math.max(input.length, 1)]) {
    const s = await streamed(input, size);
    t.equal(s.body.toString('latin1'), expected.toString('latin1'), `${name} (stream, chunks of ${size})`);
    t.equal(s.added, added, `${name} (stream, chunks of ${size}): added`);
  }
}

t.test('the base element goes right after the <head…> start tag', async (t) => {
  const cases: [string, string, string][] = [
    ['<html><head><title>x</title></head><body>hi</body></html>', `<html><head>${TAG}<title>x</title></head><body>hi</body></html>`, 'plain head'],
    [
      '<!DOCTYPE html><html lang="en"><HEAD class=x><title>t</title>',
      `<!DOCTYPE html><html lang="en"><HEAD class=x>${TAG}<title>t</title>`,
      'upper-case tag with attributes',
    ],
    ['<head\n  data-x="1">t', `<head\n  data-x="1">${TAG}t`, 'attributes on several lines'],
    ['<html><head></head><body><p>x</p></body>', `<html><head>${TAG}</head><body><p>x</p></body>`, 'empty head'],
    ['<html><head><basefont size=3></head>', `<html><head>${TAG}<basefont size=3></head>`, '<basefont> is not <base>'],
  ];
  for (const [page, want, name] of cases) await gives(t, page, want, name);
});

t.test('without a head element: in front of the content, after BOM, doctype, comments and <html…>', async (t) => {
  const cases: [string, string, string][] = [
    ['<p>just text', `${TAG}<p>just text`, 'no head, no html'],
    ['', TAG, 'empty body'],
    [
      '\xef\xbb\xbf<!doctype html>\n<!-- c -->\n<html>\n<p>no head',
      `\xef\xbb\xbf<!doctype html>\n<!-- c -->\n<html>\n${TAG}<p>no head`,
      'UTF-8 BOM, doctype, comment, html',
    ],
    [
      '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><p>',
      `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml">${TAG}<p>`,
      'XML declaration (XHTML)',
    ],
    ['<header>x</header>', `${TAG}<header>x</header>`, '<header> is not <head>'],
    ['<html><headx><p>', `<html>${TAG}<headx><p>`, '<headx> is not <head>'],
  ];
  for (const [page, want, name] of cases) await gives(t, page, want, name);
});

t.test('no insertion when the page has a base element in its head', async (t) => {
  const cases: [string, string][] = [
    ['<head><base href="/"></head>', 'base in head'],
    ['<HTML><HEAD><TITLE>x</TITLE><BASE HREF="/x/"></HEAD>', 'upper case'],
    ['<base/>', 'self-closing base, no head'],
    ['<head><base\ttarget="_top"></head>', 'base with only target'],
  ];
  for (const [page, name] of cases) await gives(t, page, page, name);
});

t.test('no insertion when the body has a byte-order mark of UTF-16 (not ASCII-compatible)', async (t) => {
  await gives(t, '\xff\xfe<\0h\0t\0m\0l\0>\0', '\xff\xfe<\0h\0t\0m\0l\0>\0', 'UTF-16LE');
  await gives(t, '\xfe\xff\0<\0h\0t\0m\0l\0>', '\xfe\xff\0<\0h\0t\0m\0l\0>', 'UTF-16BE');
});

t.test('without insertion the buffer function returns the body itself', async (t) => {
  const body = b('<head><base href="/"></head>');
  const r = withBaseElementBuffer(body, URI_R);
  t.equal(r.body, body);
  t.equal(r.added, 0);
});

t.test('the href attribute value is escaped (HTML: & " < >)', async (t) => {
  const uri = 'http://a.example/x?a=1&b="2"<>';
  const want = '<head><base href="http://a.example/x?a=1&amp;b=&quot;2&quot;&lt;&gt;">';
  t.equal(withBaseElementBuffer(b('<head>'), uri).body.toString('latin1'), want);
  t.equal((await streamed(b('<head>'), 1, uri)).body.toString('latin1'), want);
  t.equal(withBaseElementBuffer(b('<head>'), uri).added, want.length - '<head>'.length);
});

t.test('only the first SCAN_BYTES (64 KiB) decide', async (t) => {
  t.equal(SCAN_BYTES, 64 * 1024);
  const fill = 'a'.repeat(SCAN_BYTES);
  // <head> beyond 64 KiB is not seen: the base element goes after <html>.
  const lateHead = '<html>' + fill + '<head><title>x</title>';
  // a base element beyond 64 KiB is not seen: one is added.
  const lateBase = '<html><head>' + fill + '<base href=x></head>';
  // a base element ending just inside 64 KiB is seen.
  const earlyBase = '<html><head>' + 'a'.repeat(SCAN_BYTES - 30) + '<base href=x></head>';
  const want = (page: string, at: number) => page.slice(0, at) + TAG + page.slice(at);
  const cases: [string, string, string][] = [
    [lateHead, want(lateHead, 6), '<head> after 64 KiB'],
    [lateBase, want(lateBase, 12), 'base after 64 KiB'],
    [earlyBase, earlyBase, 'base within 64 KiB'],
  ];
  for (const [page, expected, name] of cases) {
    t.equal(withBaseElementBuffer(b(page), URI_R).body.toString('latin1'), expected, `${name} (buffer)`);
    for (const size of [1024, 4096, SCAN_BYTES])
      t.equal((await streamed(b(page), size)).body.toString('latin1'), expected, `${name} (stream, chunks of ${size})`);
  }
});

t.test('only the first SCAN_BYTES decide, also when the stream chunks do not divide 64 KiB', async (t) => {
  const fill = 'a'.repeat(SCAN_BYTES);
  for (const [name, page] of [
    ['<head> after 64 KiB', '<html>' + fill + '<head><title>x</title>'],
    ['base after 64 KiB', '<html><head>' + fill + '<base href=x></head>'],
  ]) {
    const whole = withBaseElementBuffer(b(page), URI_R);
    t.equal(whole.added, TAG.length, `${name}: buffer adds the base element`);
    for (const size of [1000, 100_000]) {
      const s = await streamed(b(page), size);
      t.equal(s.body.toString('latin1'), whole.body.toString('latin1'), `${name}: chunks of ${size} give the same bytes`);
    }
  }
});

t.test('streamed and buffered agree when a base element follows <body> with no </head> before it', async (t) => {
  for (const text of ['<html><head><title>x</title><body><base href="/y/"><p>z', '<html><body><base href=x>']) {
    const page = b(text);
    const whole = withBaseElementBuffer(page, URI_R);
    t.equal(whole.added, 0, `${text}: buffer sees the base element`);
    for (const size of [1, 3]) {
      const s = await streamed(page, size);
      t.equal(s.body.toString('latin1'), text, `${text}: chunks of ${size} give the page unchanged`);
    }
  }
});

t.test('a <head> inside a leading comment is not the head element', async (t) => {
  const page = '<!-- <head> --><p>x';
  const want = `<!-- <head> -->${TAG}<p>x`;
  t.equal(withBaseElementBuffer(b(page), URI_R).body.toString('latin1'), want, 'buffer');
  for (const size of [1, 3]) t.equal((await streamed(b(page), size)).body.toString('latin1'), want, `stream, chunks of ${size}`);
});

t.test('isHtml: text/html and application/xhtml+xml (lower case, no parameters, as the index stores them)', async (t) => {
  t.equal(isHtml('text/html'), true);
  t.equal(isHtml('application/xhtml+xml'), true);
  for (const mime of ['text/plain', 'image/svg+xml', 'application/xml', 'text/css', '']) t.equal(isHtml(mime), false, JSON.stringify(mime));
});
