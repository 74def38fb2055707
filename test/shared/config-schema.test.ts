import t, { type Test } from 'tap';
import { ConfigError, parseYamlText, type YamlSource } from '#shared/config.js';
import { type CheckOptions, type ConfigSchema, checkConfig, defineCheck, fillMessage, settingsTable } from '#shared/config-schema.js';

// Plain JSON Schema objects. checkConfig is called through an untyped view: deriving the value
// type of a schema held as the wide ConfigSchema type is too deep for tsc, and the test looks at
// values with its own expectations.
type Schema = object;
const schema = (s: object): Schema => s;
const checkAny = checkConfig as unknown as (
  schema: Schema,
  src: YamlSource,
  doc: number,
  at: (string | number)[],
  value: unknown,
  opts?: CheckOptions,
) => unknown;

defineCheck('unit-test-even', (v) => typeof v === 'number' && v % 2 === 0);

const Nested = {
  type: 'object',
  properties: { depth: { type: 'integer', errorMessage: 'must be an integer' }, width: { type: 'integer', default: 3 } },
  required: ['depth'],
  additionalProperties: false,
} as const;

const S = schema({
  type: 'object',
  properties: {
    name: { type: 'string', description: 'the name', errorMessage: 'must be a name', missingMessage: 'what this is called' },
    port: { type: 'integer', minimum: 1, maximum: 65535, default: 8090, description: 'listen | port', errorMessage: 'must be a port number 1-65535' },
    size: { type: 'integer', default: 4294967296, docDefault: '4294967296 (4 GiB)', description: 'most bytes' },
    flag: { type: 'boolean', default: false, description: 'a switch' },
    on: { type: 'boolean', default: true },
    pair: { type: 'integer', check: 'unit-test-even', default: 2, description: 'an even number', errorMessage: '{key} must be even (got {value})' },
    tags: {
      type: 'array',
      items: { type: 'string', pattern: '^[a-z]+$', errorMessage: 'entry {value} of {key} must be lower-case letters' },
      default: ['a', 'b'],
      description: 'tags',
    },
    empty: { type: 'array', items: { type: 'string' }, default: [] },
    nested: Nested,
    plain: { type: 'string' },
  },
  required: ['name'],
  additionalProperties: false,
});

/** Checks YAML `text` (file c.yaml) against `schema`: the checked value. */
function check(text: string, schema: Schema = S, opts: CheckOptions = {}): unknown {
  const src = parseYamlText(text, 'c.yaml');
  return checkAny(schema, src, 0, [], src.values[0], opts);
}

/** Asserts that YAML `text` is refused with ConfigError `want`; `how` is the check options or the rule's name. */
function message(t: Test, text: string, want: string, how: CheckOptions | string = {}): void {
  const name = typeof how === 'string' ? how : JSON.stringify(text);
  try {
    check(text, S, typeof how === 'string' ? {} : how);
    t.fail(`${name}: no ConfigError`);
  } catch (err) {
    t.type(err, ConfigError, name);
    t.equal((err as Error).message, want, name);
  }
}

const DEFAULTS = { port: 8090, size: 4294967296, flag: false, on: true, pair: 2, tags: ['a', 'b'], empty: [] };

t.test('defaults are filled in for absent settings; given values are kept', async (t) => {
  t.same(check('name: a\n'), { name: 'a', ...DEFAULTS });
  t.same(check('name: a\nport: 80\ntags: [x]\nflag: true\n'), { name: 'a', ...DEFAULTS, port: 80, tags: ['x'], flag: true });
  t.same(check('name: a\nnested:\n  depth: 1\n'), { name: 'a', ...DEFAULTS, nested: { depth: 1, width: 3 } }, 'defaults in a nested mapping');
});

t.test('a key with no value (key: or key: null) counts as absent', async (t) => {
  t.same(check('name: a\nport:\nflag: ~\ntags: null\n'), { name: 'a', ...DEFAULTS });
  t.same(check('name: a\nnested:\n  depth: 1\n  width:\n'), { name: 'a', ...DEFAULTS, nested: { depth: 1, width: 3 } }, 'at any depth');
  message(t, 'name:\n', 'c.yaml:1: name is missing (what this is called)');
});

t.test('checking does not change the parsed document, and each result has its own defaults', async (t) => {
  const src = parseYamlText('name: a\nport:\n', 'c.yaml');
  const a = checkAny(S, src, 0, [], src.values[0]) as { tags: string[] };
  t.same(src.values[0], { name: 'a', port: null });
  a.tags.push('z');
  t.same((checkAny(S, src, 0, [], src.values[0]) as { tags: string[] }).tags, ['a', 'b']);
});

t.test('an unknown key: file:line and the known keys; the unknownKey option words it', async (t) => {
  message(t, 'name: a\n\nbogus: 1\n', 'c.yaml:3: unknown setting "bogus" (known: name, port, size, flag, on, pair, tags, empty, nested, plain)');
  message(t, 'name: a\nnested:\n  depth: 1\n  deep: 2\n', 'c.yaml:4: unknown setting "deep" (known: depth, width)', 'in a nested mapping: its own keys');
  message(t, 'name: a\nnested:\n  depht: 1\n', 'c.yaml:3: unknown setting "depht" (did you mean "depth"?)', 'a near miss (letters swapped): the key meant');
  message(t, 'name: a\nSIZZE: 1\n', 'c.yaml:2: unknown setting "SIZZE" (did you mean "size"?)', 'case ignored in the distance');
  let seen: [string, string[]] | undefined;
  message(t, 'name: a\nPort: 1\n', 'c.yaml:2: Port? did you mean port', {
    unknownKey: (key, known) => {
      seen = [key, known];
      return `${key}? did you mean ${known.find((k) => k.toLowerCase() === key.toLowerCase())}`;
    },
  });
  t.same(seen, ['Port', ['name', 'port', 'size', 'flag', 'on', 'pair', 'tags', 'empty', 'nested', 'plain']]);
});

t.test('a missing required key: "key is missing (missingMessage)", at the line of its mapping', async (t) => {
  message(t, 'port: 80\n', 'c.yaml:1: name is missing (what this is called)');
  message(t, 'name: a\nnested:\n  width: 1\n', 'c.yaml:3: depth is missing', 'without missingMessage: no parenthesis');
});

t.test('errorMessage without "{": "<key> <message>, not <value as JSON>"', async (t) => {
  message(t, 'name: a\nport: 99999\n', 'c.yaml:2: port must be a port number 1-65535, not 99999');
  message(t, 'name: a\nport: 0\n', 'c.yaml:2: port must be a port number 1-65535, not 0');
  message(t, 'name: a\nport: "80"\n', 'c.yaml:2: port must be a port number 1-65535, not "80"', 'no type coercion');
  message(t, 'name: 5\n', 'c.yaml:1: name must be a name, not 5');
  message(t, 'name: a\nnested:\n  depth: x\n', 'c.yaml:3: depth must be an integer, not "x"');
});

t.test('errorMessage as a template: {key} and {value} filled in', async (t) => {
  message(t, 'name: a\npair: 3\n', 'c.yaml:2: pair must be even (got 3)');
});

t.test('without errorMessage: the validator message in the same shape', async (t) => {
  message(t, 'name: a\nplain: 5\n', 'c.yaml:2: plain must be string, not 5');
});

t.test('a list entry that is refused gives the line of the entry, not of the list', async (t) => {
  message(t, 'name: a\ntags:\n  - ok\n  - fine\n  - Bad\n', 'c.yaml:5: entry "Bad" of tags must be lower-case letters');
  message(t, 'name: a\ntags: [ok, Bad]\n', 'c.yaml:2: entry "Bad" of tags must be lower-case letters', 'flow list: its line');
});

t.test('defineCheck: a named check refuses values JSON Schema cannot describe', async (t) => {
  t.same((check('name: a\npair: 4\n') as { pair: number }).pair, 4);
  message(t, 'name: a\npair: 5\n', 'c.yaml:2: pair must be even (got 5)');
  defineCheck('unit-test-late', (v) => v === 'yes');
  const L = schema({ type: 'object', properties: { v: { type: 'string', check: 'unit-test-late', errorMessage: 'must be yes' } } });
  t.same(check('v: yes\n', L), { v: 'yes' });
  t.throws(() => check('v: no\n', L), new ConfigError('c.yaml:1: v must be yes, not "no"'));
});

t.test('line numbers count from the document and key path given (at, doc)', async (t) => {
  const src = parseYamlText('name: a\n---\nname: b\nport: x\n', 'm.yaml');
  t.throws(() => checkAny(S, src, 1, [], src.values[1]), new ConfigError('m.yaml:4: port must be a port number 1-65535, not "x"'), 'second document');
  const v = parseYamlText('vhosts:\n  - name: a\n  - name: b\n    port: -1\n', 'v.yaml');
  const entry = (v.values[0] as { vhosts: unknown[] }).vhosts[1];
  t.throws(() => checkAny(S, v, 0, ['vhosts', 1], entry), new ConfigError('v.yaml:4: port must be a port number 1-65535, not -1'), 'a part of the document');
});

t.test('fillMessage: plain message and template', async (t) => {
  t.equal(fillMessage('must be x', 'k', 'v'), 'k must be x, not "v"');
  t.equal(fillMessage('{key} is {value}; {key} again', 'k', [1, 'a']), 'k is [1,"a"]; k again');
  t.equal(fillMessage('must be set', 'k', undefined), 'k must be set, not undefined');
});

t.test('settingsTable: one markdown row per setting in schema order', async (t) => {
  t.equal(
    settingsTable(S as ConfigSchema),
    [
      '| key | default | meaning |',
      '|---|---|---|',
      '| `name` | — (required) | the name |',
      '| `port` | `8090` | listen \\| port |',
      '| `size` | 4294967296 (4 GiB) | most bytes |',
      '| `flag` | `Off` | a switch |',
      '| `on` | `On` |  |',
      '| `pair` | `2` | an even number |',
      '| `tags` | `[a, b]` | tags |',
      '| `empty` | `[]` |  |',
      '| `nested` | — |  |',
      '| `plain` | — |  |',
    ].join('\n') + '\n',
  );
  t.equal(settingsTable(S as ConfigSchema, 'setting').split('\n')[0], '| setting | default | meaning |', 'keyHeading');
  t.equal(
    settingsTable(schema({ type: 'object', properties: {} }) as ConfigSchema),
    '| key | default | meaning |\n|---|---|---|\n',
    'no settings: the header only',
  );
});
