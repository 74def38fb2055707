import t from 'tap';
import { formatHttpDate, parseHttpDate, parseTimestamp14, toTimestamp14 } from '#shared/http-date.js';

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
