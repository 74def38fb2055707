import t from 'tap';
import { fieldName } from '../../../archive/http/field-names.js';

t.test('fieldName: the registered case of a field name (RFC 9110 §5.1: case-insensitive, but tools compare it exactly)', async (t) => {
  const cases: [string, string, string][] = [
    ['link', 'Link', 'RFC 8288'],
    ['VARY', 'Vary', 'any case in'],
    ['memento-datetime', 'Memento-Datetime', 'RFC 7089 §2.1.1'],
    ['preference-applied', 'Preference-Applied', 'RFC 7240'],
    ['content-type', 'Content-Type', ''],
    ['access-control-allow-origin', 'Access-Control-Allow-Origin', ''],
    ['x-content-type-options', 'X-Content-Type-Options', ''],
    ['etag', 'ETag', 'irregular: registered as ETag'],
    ['www-authenticate', 'WWW-Authenticate', 'irregular'],
    ['content-md5', 'Content-MD5', 'irregular'],
    ['x-archive-headers-omitted', 'X-Archive-Headers-Omitted', 'a name of our own: each word capitalised'],
    ['x-archive-orig-etag', 'X-Archive-Orig-ETag', 'an echoed original header: the prefix, then its own name’s case'],
    ['x-archive-orig-set-cookie', 'X-Archive-Orig-Set-Cookie', ''],
    ['x-archive-orig-', 'X-Archive-Orig-', 'the bare prefix'],
  ];
  for (const [name, want, why] of cases) t.equal(fieldName(name), want, `${name}${why ? ': ' + why : ''}`);
  t.equal(fieldName('Memento-Datetime'), fieldName('memento-datetime'), 'the same for every spelling');
});
