import t from 'tap';
import { formatHttpDate, formatIsoSeconds, parseHttpDate, parseTimestamp14, toTimestamp14 } from '#shared/http-date.js';

t.test('IMF-fixdate round trip (RFC 7231 §7.1.1.1)', async (t) => {
  const d = new Date(Date.UTC(2001, 2, 5, 20, 35, 0));
  t.equal(formatHttpDate(d), 'Mon, 05 Mar 2001 20:35:00 GMT');
  t.same(parseHttpDate('Mon, 05 Mar 2001 20:35:00 GMT'), d);
});

t.test('obsolete HTTP-date forms are accepted on input (RFC 7231 §7.1.1.1)', async (t) => {
  const d = new Date(Date.UTC(1994, 10, 6, 8, 49, 37));
  t.same(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT'), d);
  t.same(parseHttpDate('Sun Nov  6 08:49:37 1994'), d);
});

t.test('impossible or malformed dates are null', async (t) => {
  for (const s of ['', 'yesterday', 'Mon, 31 Feb 2001 20:35:00 GMT', 'Mon, 05 Mar 2001 25:35:00 GMT', 'Mon, 5 Mar 2001 20:35:00 GMT', '2001-03-05T20:35:00Z']) {
    t.equal(parseHttpDate(s), null, s);
  }
});

t.test('14-digit Memento timestamps', async (t) => {
  const d = new Date(Date.UTC(2001, 2, 5, 20, 35, 7));
  t.equal(toTimestamp14(d), '20010305203507');
  t.same(parseTimestamp14('20010305203507'), d);
  t.same(parseTimestamp14('2001'), new Date(Date.UTC(2001, 0, 1)));
  t.same(parseTimestamp14('200103'), new Date(Date.UTC(2001, 2, 1)));
  for (const s of ['2001030520350', '20011305203507', '20010230000000', 'abcd', '200', '200103052035071']) t.equal(parseTimestamp14(s), null, s);
});

t.test('ISO 8601 to the second (WARC-Date, timemap-json)', async (t) => {
  t.equal(formatIsoSeconds(985120500), '2001-03-20T20:35:00Z', 'epoch seconds');
  t.equal(formatIsoSeconds(new Date('2001-03-20T20:35:00.999Z')), '2001-03-20T20:35:00Z', 'milliseconds dropped, not rounded');
  t.equal(formatIsoSeconds(new Date(Date.UTC(1999, 0, 2, 3, 4, 5))), '1999-01-02T03:04:05Z', 'two-digit fields padded');
  t.equal(formatIsoSeconds(-62135596800), '0001-01-01T00:00:00Z', 'year 1 padded to four digits');
  t.equal(formatIsoSeconds(253402300800), '+010000-01-01T00:00:00Z', 'years past 9999 as Date#toISOString writes them');
  t.throws(() => formatIsoSeconds(new Date(Number.NaN)), RangeError, 'an invalid Date throws');
});
