import t from 'tap';
import { type ArchiveSpan, archiveForInstant, holdingDistance, isLocal, spanDistance } from '../../archive/spans.js';

const at = (iso: string) => Date.parse(iso) / 1000;

// Oldest first, as archive.yaml lists them (docs/architecture.md "Archives and time spans"):
// an open start, a remote span, a gap in 2010-2014, an open end.
const OLD: ArchiveSpan = { id: 'old', from: -Infinity, until: at('2000-01-01T00:00:00Z') };
const MID: ArchiveSpan = {
  id: 'mid',
  from: at('2000-01-01T00:00:00Z'),
  until: at('2010-01-01T00:00:00Z'),
  timegate: 'http://other.example/mid/timegate/',
  timemap: 'http://other.example/mid/timemap/link/',
};
const NEW: ArchiveSpan = { id: 'new', from: at('2015-01-01T00:00:00Z'), until: Infinity };
const ARCHIVES = [OLD, MID, NEW];

t.test('isLocal: an archive is local exactly when it has no remote timegate', async (t) => {
  t.equal(isLocal(OLD), true, 'no timegate: stored and served here');
  t.equal(isLocal(NEW), true, 'no timegate, open end');
  t.equal(isLocal(MID), false, 'a timegate on another host: remote');
});

t.test('archiveForInstant: the span that holds t, from inclusive, until exclusive (docs/architecture.md "Archives and time spans")', async (t) => {
  const cases: [string, number, string | undefined][] = [
    ['long before everything: the open start holds it', at('1900-01-01T00:00:00Z'), 'old'],
    ['one second before the first boundary', at('1999-12-31T23:59:59Z'), 'old'],
    ['at the boundary: `from` of the next span is inclusive, `until` of the previous exclusive', at('2000-01-01T00:00:00Z'), 'mid'],
    ['inside a remote span: remote archives hold instants too', at('2005-06-01T00:00:00Z'), 'mid'],
    ['the last second of a span', at('2009-12-31T23:59:59Z'), 'mid'],
    ['at `until` of a span followed by a gap: nobody', at('2010-01-01T00:00:00Z'), undefined],
    ['inside the gap', at('2012-01-01T00:00:00Z'), undefined],
    ['one second before `from` after a gap', at('2014-12-31T23:59:59Z'), undefined],
    ['at `from` after a gap', at('2015-01-01T00:00:00Z'), 'new'],
    ['far in the future: the open end holds it', at('2999-01-01T00:00:00Z'), 'new'],
  ];
  for (const [rule, instant, want] of cases) t.equal(archiveForInstant(ARCHIVES, instant)?.id, want, rule);
  t.equal(archiveForInstant([], 0), undefined, 'no archives: no span');
});

t.test('spanDistance: seconds from t to the nearest second of [from, until)', async (t) => {
  const span = { from: 1000, until: 2000 }; // seconds 1000 … 1999
  const cases: [number, number, string][] = [
    [1000, 0, 'at `from`: inside'],
    [1500, 0, 'inside'],
    [1999, 0, 'the last second before `until`: inside'],
    [999, 1, 'one second before `from`'],
    [400, 600, 'before: from - t'],
    [2000, 1, 'at `until` (exclusive): one second past the last second inside'],
    [2001, 2, 'after: t - (until - 1)'],
  ];
  for (const [instant, want, rule] of cases) t.equal(spanDistance(span, instant), want, `t=${instant}: ${rule}`);
  t.equal(spanDistance({ from: -Infinity, until: 2000 }, -1e12), 0, 'an open start holds every earlier instant');
  t.equal(spanDistance({ from: 1000, until: Infinity }, 1e12), 0, 'an open end holds every later instant');
  t.equal(spanDistance({ from: -Infinity, until: 2000 }, 2010), 11, 'past an open start span: measured from its `until`');
});

t.test('holdingDistance: seconds from t to the closed interval [first, last] of the mementos', async (t) => {
  const h = { first: 1000, last: 2000 };
  const cases: [number, number, string][] = [
    [1000, 0, 'at the first memento'],
    [2000, 0, 'at the last memento (closed: `last` is a memento, unlike a span’s `until`)'],
    [1500, 0, 'between them'],
    [999, 1, 'a second before the first'],
    [2001, 1, 'a second after the last'],
    [3000, 1000, 'after: t - last'],
    [0, 1000, 'before: first - t'],
  ];
  for (const [instant, want, rule] of cases) t.equal(holdingDistance(h, instant), want, `t=${instant}: ${rule}`);
  t.equal(holdingDistance({ first: 1500, last: 1500 }, 1500), 0, 'a single memento: distance 0 at its datetime');
  t.equal(holdingDistance({ first: 1500, last: 1500 }, 1490), 10, 'a single memento: distance to its datetime');
});
