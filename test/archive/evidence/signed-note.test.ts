/**
 * Signed notes (C2SP signed-note), checkpoints (tlog-checkpoint) and
 * witness cosignatures (tlog-cosignature, Ed25519): the specs' own
 * examples verify, our signatures verify, and malformed or forged notes
 * are refused with one line.
 */
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import {
  checkpointText,
  cosignatureLine,
  cosignatureTime,
  formatNote,
  formatVerifierKey,
  MAX_NOTE_BYTES,
  noteSignerOf,
  parseCheckpointText,
  parseNote,
  parseVerifierKey,
  SIG_COSIGNATURE_V1,
  signNote,
  SignedNoteError,
  verifierKeyOf,
  verifyNote,
} from '../../../archive/evidence/signed-note.js';

t.test('the signed-note spec example verifies with its vkey', async (t) => {
  const vkey = parseVerifierKey('example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k');
  const note = parseNote(
    'This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n',
  );
  t.equal(note.text, 'This is an example message.\n');
  t.same(
    verifyNote(note, [vkey]).verified.map((v) => v.name),
    ['example.com/foo'],
  );
  const changed = { ...note, text: 'This is an example massage.\n' };
  t.throws(() => verifyNote(changed, [vkey]), SignedNoteError, 'a changed text fails the known key');
});

t.test('a checkpoint signed here verifies, round-trips, and names its key', async (t) => {
  const { privateKey } = generateKeyPairSync('ed25519');
  const signer = noteSignerOf('archive.example.org/current', privateKey);
  const text = checkpointText({ origin: signer.name, treeSize: 20852163, rootHash: Buffer.alloc(32, 7) });
  t.equal(text, `archive.example.org/current\n20852163\n${Buffer.alloc(32, 7).toString('base64')}\n`);
  const signed = signNote(text, signer);
  const note = parseNote(signed);
  t.equal(formatNote(note), signed);
  const vkey = verifierKeyOf(signer.name, privateKey);
  const again = parseVerifierKey(formatVerifierKey(vkey));
  t.ok(again.keyId.equals(vkey.keyId));
  t.same(
    verifyNote(note, [again]).verified.map((v) => v.name),
    [signer.name],
  );
  t.same(parseCheckpointText(note.text), { origin: signer.name, treeSize: 20852163, rootHash: Buffer.alloc(32, 7) });
  const other = verifierKeyOf('archive.example.org/2025', privateKey);
  t.throws(() => verifyNote(note, [other]), /no signature by a known key/, 'another log name is another key');
});

t.test('a witness cosignature (type 0x04) verifies over the checkpoint text', async (t) => {
  const log = generateKeyPairSync('ed25519').privateKey;
  const witness = generateKeyPairSync('ed25519').privateKey;
  const text = checkpointText({ origin: 'a.example/log', treeSize: 5, rootHash: Buffer.alloc(32, 1) });
  const signed = signNote(text, noteSignerOf('a.example/log', log)) + cosignatureLine(text, noteSignerOf('w.example/w1', witness), 1679315147);
  const note = parseNote(signed);
  t.equal(note.signatures.length, 2);
  t.equal(cosignatureTime(note.signatures[1]!.signature), 1679315147);
  const wkey = verifierKeyOf('w.example/w1', witness, SIG_COSIGNATURE_V1);
  const lkey = verifierKeyOf('a.example/log', log);
  t.same(
    verifyNote(note, [lkey, wkey]).verified.map((v) => v.name),
    ['a.example/log', 'w.example/w1'],
  );
  const forged = parseNote(signed.replace('\n5\n', '\n6\n'));
  t.throws(() => verifyNote(forged, [wkey]), /does not verify/);
});

t.test('malformed notes, vkeys and checkpoints are refused in one line', async (t) => {
  t.throws(() => parseNote('no blank line\n— a AAAAAAA=\n'), /blank line/);
  t.throws(() => parseNote('text\n\n— a not*base64\n'), /base64/);
  t.throws(() => parseNote('text\r\n\n— a AAAAAAA=\n'), /control character/);
  t.throws(() => parseNote(Buffer.alloc(MAX_NOTE_BYTES + 1, 0x41)), /at most/);
  t.throws(() => parseNote(Buffer.from([0x74, 0xff, 0x0a, 0x0a])), /not UTF-8/);
  t.throws(() => parseVerifierKey('example.com/foo+530d903b+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k'), /key ID/);
  t.throws(() => parseVerifierKey('a b+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k'), /space/);
  t.throws(() => parseCheckpointText('o\n012\nAAAA\n'), /decimal/);
  t.throws(() => parseCheckpointText('o\n12\nAAAA\n'), /32 bytes/);
});
