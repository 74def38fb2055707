import t from 'tap';
import { formatLink, formatLinkHeader, hasRel, type Link, parseLinks } from '#shared/link.js';

const DT = 'Tue, 20 Mar 2001 20:35:00 GMT';

t.test('RFC 7089 §2.2: a memento link is <URI-M>; rel="…"; datetime="IMF-fixdate", the date not percent-encoded', async (t) => {
  t.equal(
    formatLink({ uri: 'http://arxiv.example.net/web/20010320203500/http://a.example.org/', rel: 'first memento', datetime: DT }),
    '<http://arxiv.example.net/web/20010320203500/http://a.example.org/>; rel="first memento"; datetime="Tue, 20 Mar 2001 20:35:00 GMT"',
  );
});

t.test('RFC 7089 §2.2: original and timemap links; attributes in the order type, datetime, from, until', async (t) => {
  t.equal(formatLink({ uri: 'http://a.example.org/', rel: 'original' }), '<http://a.example.org/>; rel="original"');
  t.equal(
    formatLink({
      uri: 'http://arxiv.example.net/timemap/http://a.example.org/',
      rel: 'timemap',
      until: 'Wed, 21 Mar 2001 00:00:00 GMT',
      from: DT,
      type: 'application/link-format',
    }),
    '<http://arxiv.example.net/timemap/http://a.example.org/>; rel="timemap"; type="application/link-format"; from="Tue, 20 Mar 2001 20:35:00 GMT"; until="Wed, 21 Mar 2001 00:00:00 GMT"',
  );
});

t.test('RFC 8288 §3 / RFC 7230 §3.2.6: a quote or backslash in an attribute value is escaped inside the quoted string', async (t) => {
  t.equal(formatLink({ uri: 'http://a/', rel: 'x', type: 'a"b\\c' }), '<http://a/>; rel="x"; type="a\\"b\\\\c"');
});

t.test('RFC 8288 §3: characters that cannot appear in a URI-Reference are percent-encoded inside <…>', async (t) => {
  const cases: [string, string][] = [
    ['http://a.example/x y', '<http://a.example/x%20y>'],
    ['http://a.example/"q"', '<http://a.example/%22q%22>'],
    ['http://a.example/<b>', '<http://a.example/%3Cb%3E>'],
    ['http://a.example/é', '<http://a.example/%C3%A9>'],
    ['http://a.example/\x7f\t', '<http://a.example/%7F%09>'],
    // already valid URI characters stay as they are (no double encoding)
    ['http://a.example/%20x?a=1&b=2&c=%2C', '<http://a.example/%20x?a=1&b=2&c=%2C>'],
  ];
  for (const [uri, want] of cases) t.equal(formatLink({ uri, rel: 'original' }), `${want}; rel="original"`, JSON.stringify(uri));
});

t.test('RFC 8288 §3 as common parsers read it: "," and ";" in a URI are percent-encoded inside <…>', async (t) => {
  // Python's requests.utils.parse_header_links cuts a URI at ";" (and loses rel); other parsers split at ",".
  t.equal(formatLink({ uri: 'http://a.example/p;x=1?a=1,2;b', rel: 'original' }), '<http://a.example/p%3Bx=1?a=1%2C2%3Bb>; rel="original"');
  t.equal(
    formatLinkHeader([
      { uri: 'http://a/,', rel: 'x' },
      { uri: 'http://b/;', rel: 'y' },
    ]),
    '<http://a/%2C>; rel="x", <http://b/%3B>; rel="y"',
  );
});

t.test('RFC 8288 §3: a Link header value is the links joined by ", " on one line', async (t) => {
  const links: Link[] = [
    { uri: 'http://a.example.org/', rel: 'original' },
    { uri: 'http://arxiv.example.net/m/1', rel: 'first last memento', datetime: DT },
  ];
  t.equal(formatLinkHeader(links), `<http://a.example.org/>; rel="original", <http://arxiv.example.net/m/1>; rel="first last memento"; datetime="${DT}"`);
  t.equal(formatLinkHeader([]), '');
});

t.test('RFC 8288 §3: a comma inside <…> does not end the link', async (t) => {
  t.same(parseLinks('<http://a.example/a,b>; rel="memento", <http://c.example/>; rel="original"'), [
    { uri: 'http://a.example/a,b', rel: 'memento' },
    { uri: 'http://c.example/', rel: 'original' },
  ]);
});

t.test('RFC 8288 §3: a comma inside a quoted string does not end the link', async (t) => {
  t.same(parseLinks(`<http://a.example/m>; rel="memento"; datetime="${DT}", <http://a.example/>; rel="original"`), [
    { uri: 'http://a.example/m', rel: 'memento', datetime: DT },
    { uri: 'http://a.example/', rel: 'original' },
  ]);
});

t.test('RFC 8288 §3: a semicolon inside <…> is part of the URI', async (t) => {
  t.same(parseLinks('<http://a.example/p;v=1>; rel="original"'), [{ uri: 'http://a.example/p;v=1', rel: 'original' }]);
});

t.test('RFC 7089 §2.2.1: a combined rel ("first memento") stays one link', async (t) => {
  const links = parseLinks(`<http://a.example/m/1>; rel="first memento"; datetime="${DT}"`);
  t.equal(links.length, 1);
  t.equal(links[0].rel, 'first memento');
  t.ok(hasRel(links[0], 'first'));
  t.ok(hasRel(links[0], 'memento'));
});

t.test('RFC 8288 §3: parameter names compare case-insensitively; unknown attributes are ignored', async (t) => {
  t.same(parseLinks('<http://a/>; REL="memento"; Datetime="D"; title="t,t"; anchor="#x"; hreflang=en'), [{ uri: 'http://a/', rel: 'memento', datetime: 'D' }]);
});

t.test('RFC 8288 §3: parameter values may be tokens instead of quoted strings; whitespace around ; and = is allowed', async (t) => {
  t.same(parseLinks('<http://a/>;rel=memento ; datetime = "D"'), [{ uri: 'http://a/', rel: 'memento', datetime: 'D' }]);
});

t.test('RFC 7230 §3.2.6: a quoted-pair inside a quoted string is unescaped', async (t) => {
  t.same(parseLinks('<http://a/>; rel="x"; type="a \\"b\\" \\\\c"'), [{ uri: 'http://a/', rel: 'x', type: 'a "b" \\c' }]);
});

t.test('RFC 6690 §2 / RFC 7089 §5.1: a link-format TimeMap with ",\\n" separators', async (t) => {
  const doc =
    '<http://a.example.org/>;rel="original",\n' +
    '<http://arxiv.example.net/timemap/http://a.example.org/>\n ; rel="self";type="application/link-format"\n ; from="Tue, 20 Jun 2000 18:02:59 GMT"\n ; until="Wed, 09 Apr 2008 20:30:51 GMT",\n' +
    '<http://arxiv.example.net/timegate/http://a.example.org/>\n ; rel="timegate",\n' +
    '<http://arxiv.example.net/web/20000620180259/http://a.example.org/>\n ; rel="first memento";datetime="Tue, 20 Jun 2000 18:02:59 GMT"\n';
  t.same(parseLinks(doc), [
    { uri: 'http://a.example.org/', rel: 'original' },
    {
      uri: 'http://arxiv.example.net/timemap/http://a.example.org/',
      rel: 'self',
      type: 'application/link-format',
      from: 'Tue, 20 Jun 2000 18:02:59 GMT',
      until: 'Wed, 09 Apr 2008 20:30:51 GMT',
    },
    { uri: 'http://arxiv.example.net/timegate/http://a.example.org/', rel: 'timegate' },
    { uri: 'http://arxiv.example.net/web/20000620180259/http://a.example.org/', rel: 'first memento', datetime: 'Tue, 20 Jun 2000 18:02:59 GMT' },
  ]);
});

t.test('malformed pieces are skipped, not thrown', async (t) => {
  const cases: [string, Link[]][] = [
    ['', []],
    ['garbage', []],
    ['<http://a/', []], // no closing >
    ['garbage, <http://a/>; rel="x"', [{ uri: 'http://a/', rel: 'x' }]],
    [
      '<http://a/>; rel="x"; junk, <http://b/>; rel="y"',
      [
        { uri: 'http://a/', rel: 'x' },
        { uri: 'http://b/', rel: 'y' },
      ],
    ],
    ['<http://a/> stray; rel="x"', [{ uri: 'http://a/', rel: 'x' }]],
    ['<http://a/>; rel="unterminated', [{ uri: 'http://a/', rel: 'unterminated' }]],
  ];
  for (const [text, want] of cases) t.same(parseLinks(text), want, JSON.stringify(text));
});

t.test('a link without rel gets rel ""', async (t) => {
  t.same(parseLinks('<http://a/>'), [{ uri: 'http://a/', rel: '' }]);
  t.same(parseLinks('<http://a/>; rel'), [{ uri: 'http://a/', rel: '' }]);
});

t.test('RFC 8288 §3.3: rel must not appear twice in a link-value; occurrences after the first are ignored', async (t) => {
  t.same(parseLinks('<http://a/>; rel="memento"; rel="original"'), [{ uri: 'http://a/', rel: 'memento' }], 'second rel ignored');
});

t.test('RFC 8288 §2.1.1: hasRel compares relation types case-insensitively, whole types only', async (t) => {
  const l: Link = { uri: 'http://a/', rel: 'first  Memento' };
  t.equal(hasRel(l, 'memento'), true);
  t.equal(hasRel(l, 'MEMENTO'), true);
  t.equal(hasRel(l, 'first'), true);
  t.equal(hasRel(l, 'mem'), false);
  t.equal(hasRel(l, 'last'), false);
  t.equal(hasRel({ uri: 'http://a/', rel: 'timemap index' }, 'timemap'), true);
  t.equal(hasRel({ uri: 'http://a/', rel: '' }, 'memento'), false);
});

t.test('format then parse gives the links back', async (t) => {
  const links: Link[] = [
    { uri: 'http://a.example.org/', rel: 'original' },
    { uri: 'http://arxiv.example.net/timegate/http://a.example.org/', rel: 'timegate' },
    {
      uri: 'http://arxiv.example.net/timemap/http://a.example.org/?a=1%2C2',
      rel: 'timemap',
      type: 'application/link-format',
      from: DT,
      until: 'Wed, 21 Mar 2001 00:00:00 GMT',
    },
    { uri: 'http://arxiv.example.net/web/20010320203500/http://a.example.org/', rel: 'first last memento', datetime: DT },
    { uri: 'http://a/%3Bx', rel: 'x', type: 'text/x; q="1", \\' },
  ];
  t.same(parseLinks(formatLinkHeader(links)), links);
  // link-format documents join with ",\n" (RFC 6690 §2)
  t.same(parseLinks(links.map(formatLink).join(',\n') + '\n'), links);
});

t.test('format then parse: a URI with characters outside URI-Reference comes back percent-encoded', async (t) => {
  t.same(parseLinks(formatLink({ uri: 'http://a.example/x y,"é"', rel: 'original' })), [{ uri: 'http://a.example/x%20y%2C%22%C3%A9%22', rel: 'original' }]);
});
