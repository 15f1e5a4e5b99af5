// Reading git's tree and commit bytes for the git provider: entries found by exact byte name,
// and malformed objects refused with a clear error rather than guessed at.
import t from 'tap';
import { findTreeEntry, firstParent } from '../../../../plugins/providers/git/objects.ts';

const oid = (byte: number) => Buffer.alloc(20, byte);
const entry = (mode: string, name: string | Buffer, id: Buffer) => Buffer.concat([Buffer.from(`${mode} `), Buffer.from(name), Buffer.from([0]), id]);
const TREE_ID = 'a'.repeat(40);

t.test('tree entries: exact names, modes, object ids', async (t) => {
  const tree = Buffer.concat([entry('40000', '.svc', oid(1)), entry('100644', 'a b.txt', oid(2)), entry('120000', 'link', oid(3)), entry('100755', 'ünï', oid(4))]);
  t.same(findTreeEntry(tree, TREE_ID, '.svc'), { mode: '40000', oid: '01'.repeat(20) });
  t.same(findTreeEntry(tree, TREE_ID, 'a b.txt'), { mode: '100644', oid: '02'.repeat(20) });
  t.same(findTreeEntry(tree, TREE_ID, 'link'), { mode: '120000', oid: '03'.repeat(20) });
  t.same(findTreeEntry(tree, TREE_ID, 'ünï'), { mode: '100755', oid: '04'.repeat(20) }, 'UTF-8 names compare as bytes');
  t.equal(findTreeEntry(tree, TREE_ID, 'a'), null, 'a prefix is not a match');
  t.equal(findTreeEntry(tree, TREE_ID, '.SVC'), null);
  t.equal(findTreeEntry(Buffer.alloc(0), TREE_ID, 'x'), null, 'the empty tree');
});

t.test('malformed trees are an error naming the object', async (t) => {
  const good = entry('100644', 'x', oid(9));
  const cases: Array<[string, Buffer, string]> = [
    ['no space', Buffer.from('100644x'), 'x'],
    ['cut short', good.subarray(0, good.length - 5), 'x'],
    ['no NUL', Buffer.from('100644 x'), 'x'],
    ['bad mode', entry('10x644', 'x', oid(9)), 'x'],
  ];
  for (const [what, bytes, name] of cases) {
    t.throws(() => findTreeEntry(bytes, TREE_ID, name), { code: 'SVC_ERR_GIT_READ', message: new RegExp(`${TREE_ID}.*malformed`) }, what);
  }
});

t.test('first parent of a commit', async (t) => {
  const tree = `tree ${'1'.repeat(40)}`;
  t.equal(firstParent(Buffer.from(`${tree}\nauthor A <a@x> 1 +0000\n\nroot`), TREE_ID), null, 'a root commit');
  t.equal(firstParent(Buffer.from(`${tree}\nparent ${'2'.repeat(40)}\nparent ${'3'.repeat(40)}\nauthor A\n\nmerge\nparent ${'4'.repeat(40)}`), TREE_ID), '2'.repeat(40), 'the first of a merge; the message is not read');
  t.throws(() => firstParent(Buffer.from('no tree line'), TREE_ID), { code: 'SVC_ERR_GIT_READ' });
  t.throws(() => firstParent(Buffer.from(`${tree}\nparent nothex\n\n`), TREE_ID), { code: 'SVC_ERR_GIT_READ' });
});
