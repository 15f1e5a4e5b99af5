import t from 'tap';
import { Type } from 'typebox';
import { compileMessageUnion, compileSchema, formatIssues, pointerToDotPath } from '../../schemas/validate.ts';

const A = Type.Object({ type: Type.Literal('a.made'), n: Type.Integer({ minimum: 0 }), kind: Type.Union([Type.Literal('x'), Type.Literal('y')]) }, { additionalProperties: false });
const B = Type.Object({ type: Type.Literal('b.made'), nested: Type.Object({ s: Type.String() }, { additionalProperties: false }) }, { additionalProperties: false });

t.test('compileSchema: ok, unknown fields, missing fields, nested paths', async (t) => {
  const c = compileSchema(B);
  t.same(c.validate({ type: 'b.made', nested: { s: 'x' } }), { ok: true, value: { type: 'b.made', nested: { s: 'x' } } });
  const bad = c.validate({ type: 'b.made', nested: { s: 1, extra: true } });
  t.notOk(bad.ok);
  if (!bad.ok) {
    t.match(formatIssues(bad.issues), /nested\.extra: unknown field/);
    t.match(formatIssues(bad.issues), /nested\.s: /);
  }
  const missing = c.validate({ type: 'b.made' });
  t.same(!missing.ok && missing.issues, [{ path: 'nested', message: 'is required' }]);
  t.equal(c.check({ type: 'b.made', nested: { s: '' } }), true);
});

t.test('union of literals gives one line per path', async (t) => {
  const c = compileSchema(A);
  const r = c.validate({ type: 'a.made', n: 1, kind: 'z' });
  t.same(!r.ok && r.issues, [{ path: 'kind', message: 'is not one of the allowed values' }]);
});

t.test('message unions dispatch on type first', async (t) => {
  const u = compileMessageUnion([A, B]);
  t.same(u.types, ['a.made', 'b.made']);
  t.ok(u.check({ type: 'a.made', n: 0, kind: 'x' }));
  const cases: Array<[unknown, string]> = [
    [null, 'must be an object'],
    [[], 'must be an object'],
    [{}, 'type: is required and must be a string'],
    [{ type: 'c.made' }, 'type: unknown message type "c.made"'],
    [{ type: 'a.made', n: -1, kind: 'x' }, 'n: must be >= 0'],
  ];
  for (const [value, text] of cases) {
    const r = u.validate(value);
    t.equal(r.ok, false);
    if (!r.ok) t.equal(formatIssues(r.issues), text);
  }
  t.throws(() => compileMessageUnion([A, A]), /duplicate message type a\.made/);
});

t.test('pointerToDotPath undoes escapes', async (t) => {
  t.equal(pointerToDotPath(''), '');
  t.equal(pointerToDotPath('/a/0/b~1c~0d'), 'a.0.b/c~d');
});
