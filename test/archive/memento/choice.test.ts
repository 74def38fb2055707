import t from 'tap';
import { chooseArchive, type Holding, type Holdings, localChoice } from '../../../archive/memento/choice.js';
import type { ArchiveSpan } from '../../../archive/spans.js';

const at = (iso: string) => Date.parse(iso) / 1000;
const y = (year: number) => at(`${year}-01-01T00:00:00Z`);

// Oldest first, as in archive.yaml: two local spans, a gap 2010-2015, a remote span, a local one.
const A00: ArchiveSpan = { id: 'a00', from: y(2000), until: y(2005) };
const A05: ArchiveSpan = { id: 'a05', from: y(2005), until: y(2010) };
const R15: ArchiveSpan = {
  id: 'r15',
  from: y(2015),
  until: y(2020),
  timegate: 'http://other.example/r15/timegate/',
  timemap: 'http://other.example/r15/timemap/link/',
};
const A20: ArchiveSpan = { id: 'a20', from: y(2020), until: y(2025) };
const ARCHIVES = [A00, A05, R15, A20];

/** Holdings from `[id, holding]` pairs; a string alone is that state. */
const holdings = (...entries: [string, Holding | Holding['state']][]): Holdings =>
  new Map(entries.map(([id, h]) => [id, typeof h === 'string' ? { state: h } : h]));
/** A 'yes' holding with first/last mementos at `first` and `last` (ISO). */
const yes = (first: string, last = first): Holding => ({ state: 'yes', first: at(first), last: at(last) });

/** Every archive of `archives` could not be asked: the choice falls to the spans alone. */
const unknownAll = (archives: ArchiveSpan[]) => holdings(...archives.map((a): [string, Holding['state']] => [a.id, 'unknown']));

t.test(
  'chooseArchive, no archive known to have it (all unknown): the archive whose span holds t, else the first, the last or the nearest (docs/architecture.md "Archives and time spans")',
  async (t) => {
    const cases: [string, number, string][] = [
      ['inside a span', at('2007-06-01T00:00:00Z'), 'a05'],
      ['inside a remote span', at('2016-06-01T00:00:00Z'), 'r15'],
      ['`from` is inclusive', y(2005), 'a05'],
      ['`until` is exclusive: the last second of a05 is a05', y(2005) - 1, 'a00'],
      ['before every span: the first', y(1990), 'a00'],
      ['one second before the first span: the first', y(2000) - 1, 'a00'],
      ['after every span: the last', y(2100), 'a20'],
      ['at `until` of the last span (exclusive): the last', y(2025), 'a20'],
      ['in the gap, near its start: the span before it', y(2011), 'a05'],
      ['at `until` of the span before a gap: that span (1 s away)', y(2010), 'a05'],
      ['in the gap, near its end: the span after it (a remote one)', y(2014), 'r15'],
    ];
    for (const [rule, instant, want] of cases) t.equal(chooseArchive(ARCHIVES, unknownAll(ARCHIVES), instant)?.id, want, rule);
  },
);

t.test('chooseArchive, all unknown: a t equally far from the spans around a gap goes to the earlier one', async (t) => {
  const spans: ArchiveSpan[] = [
    { id: 'x', from: 0, until: 100 }, // seconds 0…99
    { id: 'y', from: 111, until: 200 },
  ];
  t.equal(chooseArchive(spans, unknownAll(spans), 105)?.id, 'x', '6 s after x’s last second, 6 s before y: the earlier');
  t.equal(chooseArchive(spans, unknownAll(spans), 106)?.id, 'y', 'one second later y is nearer');
});

t.test('chooseArchive, all unknown: open ends hold every instant beyond them', async (t) => {
  const open: ArchiveSpan[] = [
    { id: 'first', from: -Infinity, until: y(2000) },
    { id: 'last', from: y(2000), until: Infinity },
  ];
  t.equal(chooseArchive(open, unknownAll(open), y(1000))?.id, 'first');
  t.equal(chooseArchive(open, unknownAll(open), y(3000))?.id, 'last');
});

t.test('localChoice without Accept-Datetime: the newest local archive with the URI-R, unless a remote archive is newer', async (t) => {
  const local = (...ids: string[]) => holdings(...ids.map((id): [string, Holding] => [id, { state: 'yes' }]));
  t.equal(localChoice(ARCHIVES, local('a20', 'a00'), undefined)?.id, 'a20', 'the newest archive is local and has it');
  t.equal(localChoice(ARCHIVES, local('a05'), undefined), undefined, 'r15 is newer than a05 and may have it: ask it');
  t.equal(localChoice(ARCHIVES, local(), undefined), undefined, 'no local archive has it: ask the remote one');
  const allLocal = [A00, A05, A20];
  t.equal(localChoice(allLocal, local('a00'), undefined)?.id, 'a00', 'only local archives: the newest that has it, skipping those that do not');
  t.equal(localChoice(allLocal, local(), undefined), undefined, 'only local archives and none has it: none');
});

t.test('localChoice with Accept-Datetime: the local archive with the nearest memento, unless a remote span is as near', async (t) => {
  const all = holdings(['a00', 'yes'], ['a05', 'yes'], ['a20', 'yes']);
  t.equal(localChoice(ARCHIVES, all, at('2007-01-01T00:00:00Z'))?.id, 'a05', 'in a05, which has it');
  t.equal(localChoice(ARCHIVES, all, y(1990))?.id, 'a00', 'before every span: the first, which has it');
  t.equal(localChoice(ARCHIVES, all, y(2011))?.id, 'a05', 'in the gap, nearer a05, which has it');
  t.equal(localChoice(ARCHIVES, all, y(2100))?.id, 'a20', 'after every span: the last, which has it');
  t.equal(
    localChoice(ARCHIVES, holdings(['a00', 'yes']), at('2007-01-01T00:00:00Z'))?.id,
    'a00',
    'a05 does not have it: a00 (2 years) is nearer than the remote span (8 years)',
  );
  t.equal(localChoice(ARCHIVES, all, at('2016-01-01T00:00:00Z')), undefined, 'the span is remote: not decided locally');
  t.equal(localChoice(ARCHIVES, all, y(2014)), undefined, 'in the gap nearer the remote span: not decided locally');
});

t.test('localChoice with Accept-Datetime: measured to the mementos, not to the spans', async (t) => {
  const t0 = at('2005-01-02T00:00:00Z'); // in a05's span
  const h = holdings(['a00', yes('2001-01-01T00:00:00Z', '2005-01-01T00:00:00Z')], ['a05', yes('2009-06-01T00:00:00Z')]);
  t.equal(localChoice(ARCHIVES, h, t0)?.id, 'a00', 'a00’s last memento is a day away, a05’s only one 4.4 years');
  const far = holdings(['a05', yes('2005-01-01T00:00:00Z')], ['a20', yes('2024-12-01T00:00:00Z')]);
  t.equal(localChoice(ARCHIVES, far, at('2012-01-01T00:00:00Z')), undefined, 'a05’s memento is 7 years away, r15’s span 3: ask r15');
  t.equal(localChoice(ARCHIVES, far, y(2008))?.id, 'a05', '3 years to a05’s memento, 7 to r15’s span: decided locally');
  const tie = holdings(['a05', yes('2005-01-01T00:00:00Z', '2009-06-01T00:00:00Z')]);
  const middle = (at('2009-06-01T00:00:00Z') + y(2015)) / 2;
  t.equal(localChoice(ARCHIVES, tie, middle), undefined, 'a remote span exactly as near as the nearest local memento: ask it');
  t.equal(localChoice(ARCHIVES, tie, middle - 1)?.id, 'a05', 'a second earlier a05’s memento is nearer');
});

t.test('chooseArchive without Accept-Datetime: the newest archive that has the URI-R', async (t) => {
  const cases: [string, Holdings, string | undefined][] = [
    ['the newest of several', holdings(['a00', 'yes'], ['a20', 'yes']), 'a20'],
    ['a remote one when it is the newest that has it', holdings(['a05', 'yes'], ['r15', 'yes'], ['a20', 'no']), 'r15'],
    ['an unknown one is passed over for an older yes', holdings(['a05', 'yes'], ['r15', 'unknown']), 'a05'],
    ['unknown only when nobody is known to have it', holdings(['a05', 'no'], ['r15', 'unknown']), 'r15'],
    ['nobody has it: none', holdings(['a00', 'no'], ['r15', 'no']), undefined],
    ['no holdings at all: none', holdings(), undefined],
  ];
  for (const [rule, h, want] of cases) t.equal(chooseArchive(ARCHIVES, h, undefined)?.id, want, rule);
});

t.test('chooseArchive with Accept-Datetime: the archive holding the nearest memento, not the one whose span holds t', async (t) => {
  // a00's last memento is one second before t, a05's only one years after: a05's span holds t, but a00 holds the nearest memento.
  const h = holdings(['a00', yes('2004-12-31T23:59:59Z')], ['a05', yes('2009-12-01T00:00:00Z')]);
  t.equal(chooseArchive(ARCHIVES, h, y(2005))?.id, 'a00', 'the nearest memento wins over the span');
  const inside = holdings(['a00', yes('2004-12-31T23:59:59Z')], ['a05', yes('2005-01-01T00:00:00Z', '2009-12-01T00:00:00Z')]);
  t.equal(chooseArchive(ARCHIVES, inside, at('2007-01-01T00:00:00Z'))?.id, 'a05', 't between the first and last memento of a05: a05');
  const remote = holdings(['a05', yes('2005-01-01T00:00:00Z')], ['r15', yes('2015-01-01T00:00:00Z', '2019-01-01T00:00:00Z')]);
  t.equal(chooseArchive(ARCHIVES, remote, y(2011))?.id, 'r15', 'a remote archive whose first memento (from its links) is nearer');
  t.equal(chooseArchive(ARCHIVES, holdings(['r15', 'yes']), at('2016-01-01T00:00:00Z'))?.id, 'r15', 'a remote primary that answered yes');
  t.equal(chooseArchive(ARCHIVES, holdings(['a00', 'yes'], ['a20', 'yes']), y(1990))?.id, 'a00', 'before every span: the first');
});

t.test('chooseArchive: when the span’s archive lacks it, the archive whose mementos are nearest in time', async (t) => {
  const t0 = at('2009-06-01T00:00:00Z'); // in a05, which has nothing
  // a00's span ends 4.4 years before t0 but its only memento is from 2000 (9.4 years); r15's memento is 5.6 years after.
  const byMementos = holdings(['a00', yes('2000-01-02T00:00:00Z')], ['r15', yes('2015-01-01T00:00:00Z')]);
  t.equal(chooseArchive(ARCHIVES, byMementos, t0)?.id, 'r15', 'measured to first/last of the mementos, not to the configured span');
  const remoteNoBounds = holdings(['a00', yes('2000-01-02T00:00:00Z')], ['r15', 'yes']);
  t.equal(chooseArchive(ARCHIVES, remoteNoBounds, t0)?.id, 'r15', 'a remote holding without first/last: measured to its configured span (5.6 years)');
  const localCloser = holdings(['a00', yes('2004-12-31T00:00:00Z')], ['r15', 'yes']);
  t.equal(chooseArchive(ARCHIVES, localCloser, t0)?.id, 'a00', 'a00’s last memento (4.4 years) is nearer than r15’s span (5.6 years)');
  t.equal(chooseArchive(ARCHIVES, holdings(['a05', 'no'], ['a20', yes('2020-01-01T00:00:00Z')]), t0)?.id, 'a20', '`no` is the same as absent');
});

t.test('chooseArchive: two archives with mementos equally near: the earlier one', async (t) => {
  const spans: ArchiveSpan[] = [
    { id: 'x', from: 0, until: 100 },
    { id: 'y', from: 100, until: 200 },
    { id: 'z', from: 200, until: 300 },
  ];
  const h = holdings(['x', { state: 'yes', first: 10, last: 50 }], ['z', { state: 'yes', first: 250, last: 290 }]);
  t.equal(chooseArchive(spans, h, 150)?.id, 'x', '100 s either way');
  t.equal(chooseArchive(spans, h, 151)?.id, 'z', 'a second later z is nearer');
});

t.test('chooseArchive: an archive that did not answer (unknown) is chosen only when no archive is known to have the URI-R', async (t) => {
  const inR15 = at('2016-01-01T00:00:00Z');
  t.equal(
    chooseArchive(ARCHIVES, holdings(['r15', 'unknown'], ['a00', 'yes']), inR15)?.id,
    'a00',
    'the primary did not answer; a far archive that has it wins',
  );
  t.equal(chooseArchive(ARCHIVES, holdings(['r15', 'unknown'], ['a20', 'no']), inR15)?.id, 'r15', 'nobody has it: the primary that did not answer');
  t.equal(
    chooseArchive(ARCHIVES, holdings(['r15', 'unknown']), at('2007-01-01T00:00:00Z'))?.id,
    'r15',
    'the primary lacks it: the nearest that did not answer',
  );
  t.equal(chooseArchive(ARCHIVES, holdings(['r15', 'no'], ['a00', 'no']), inR15), undefined, 'nobody has it and all answered: none');
  t.equal(chooseArchive(ARCHIVES, holdings(), inR15), undefined, 'no holdings: none');
});

t.test('chooseArchive: of several unknown archives, the one whose span is nearest', async (t) => {
  const remote = (id: string, from: number, until: number): ArchiveSpan => ({
    id,
    from,
    until,
    timegate: `http://h/${id}/timegate/`,
    timemap: `http://h/${id}/timemap/link/`,
  });
  const spans = [remote('p', 0, 100), { id: 'q', from: 100, until: 200 }, remote('r', 200, 300)];
  const h = holdings(['p', 'unknown'], ['r', 'unknown']);
  t.equal(chooseArchive(spans, h, 120)?.id, 'p', '21 s to p, 80 s to r');
  t.equal(chooseArchive(spans, h, 190)?.id, 'r', '91 s to p, 10 s to r');
});
