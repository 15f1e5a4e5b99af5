// The scaler contract: agents a scaler starts really run (the harness supplies the agent command
// through the config slice and says which agents it sees running), carry the mandatory labels,
// stay within capacity, and stop when scaled down or when the scaler closes.
import type { ScalerExtensionPoint } from '../scaler.ts';
import { eventually, expect, expectEqual, expectRejects, show } from './check.ts';
import type { BaseHarness, ContractContext, ContractPoint, ContractScope, ContractSuite } from './types.ts';

export interface ObservedAgent {
  id: string;
  labels: readonly string[];
}

export interface ScalerHarness extends BaseHarness<'scaler'> {
  /** The agents running now for the point `scope` belongs to, as the harness's agent command reports them. */
  running(scope: ContractScope): Promise<readonly ObservedAgent[]>;
  /** How long an agent may take to start or stop, default 60 000 ms. */
  settleMs?: number;
}

type Ctx = ContractContext<'scaler', ScalerHarness>;
const LABELS = ['linux', 'contract', 'gpu-none'];

async function runningIds(ctx: Ctx): Promise<string[]> {
  return (await ctx.harness.running(ctx.scope)).map((a) => a.id).sort();
}

async function startOne(ctx: Ctx, scaler: ScalerExtensionPoint): Promise<string> {
  const { agentIds } = await scaler.scaleUp({ mandatoryLabels: LABELS, count: 1, reason: 'contract' });
  expect(Array.isArray(agentIds) && agentIds.length === 1 && typeof agentIds[0] === 'string', `scaleUp({ count: 1 }) must return one agent id, got ${show(agentIds)}`);
  const id = agentIds[0];
  await eventually(async () => (await runningIds(ctx)).includes(id), ctx.harness.settleMs ?? 60_000, `agent ${id} never started`);
  return id;
}

const points: ContractPoint<'scaler', ScalerHarness>[] = [
  {
    point: 'capacity: non-negative integers with pending <= current <= max and max >= 1',
    async run({ instance }: Ctx) {
      const c = await instance.capacity();
      for (const field of ['current', 'pending', 'max'] as const) {
        expect(Number.isInteger(c[field]) && c[field] >= 0, `capacity().${field} must be a non-negative integer, got ${show(c[field])}`);
      }
      expect(c.pending <= c.current && c.current <= c.max && c.max >= 1, `capacity() is inconsistent: ${show(c)}`);
      expectEqual(c.current, 0, 'capacity().current of a scaler that started nothing');
    },
  },
  {
    point: 'scale-up: starts a real agent with the mandatory labels and returns its id',
    async run(ctx: Ctx) {
      const id = await startOne(ctx, ctx.instance);
      const agent = (await ctx.harness.running(ctx.scope)).find((a) => a.id === id);
      expectEqual([...(agent?.labels ?? [])].sort(), [...LABELS].sort(), `labels agent ${id} runs with`);
      expect((await ctx.instance.capacity()).current >= 1, 'capacity().current counts the started agent');
    },
  },
  {
    point: 'scale-up: never beyond max',
    async run(ctx: Ctx) {
      const { max } = await ctx.instance.capacity();
      const { agentIds } = await ctx.instance.scaleUp({ mandatoryLabels: LABELS, count: max + 2 });
      expect(agentIds.length <= max, `scaleUp({ count: ${max + 2} }) started ${agentIds.length} agents, max is ${max}`);
      expectEqual(new Set(agentIds).size, agentIds.length, 'agent ids are unique');
      const again = await ctx.instance.scaleUp({ mandatoryLabels: LABELS, count: 1 });
      expect(agentIds.length + again.agentIds.length <= max, `a second scaleUp went past max ${max}`);
      await eventually(async () => (await runningIds(ctx)).length === agentIds.length + again.agentIds.length, ctx.harness.settleMs ?? 60_000, 'the agents returned never all ran');
      expect((await ctx.instance.capacity()).current <= max, 'capacity().current went past max');
    },
  },
  {
    point: 'scale-down: stops the named agents and ignores unknown ids',
    async run(ctx: Ctx) {
      const id = await startOne(ctx, ctx.instance);
      const { stopped } = await ctx.instance.scaleDown({ agentIds: [id, 'no-such-agent'] });
      expectEqual(stopped, [id], 'scaleDown().stopped');
      await eventually(async () => !(await runningIds(ctx)).includes(id), ctx.harness.settleMs ?? 60_000, `agent ${id} still runs after scaleDown`);
      expectEqual((await ctx.instance.capacity()).current, 0, 'capacity().current after scaling down');
      expectEqual((await ctx.instance.scaleDown({ agentIds: [id] })).stopped, [], 'a second scaleDown of the same agent');
    },
  },
  {
    point: 'errors: a count below 1 or not an integer is refused with an input SvcError',
    async run(ctx: Ctx) {
      for (const count of [0, -1, 1.5, Number.NaN]) {
        await expectRejects(() => ctx.instance.scaleUp({ mandatoryLabels: LABELS, count }), { kind: 'input' }, `scaleUp({ count: ${count} })`);
      }
      expectEqual(await runningIds(ctx), [], 'agents started by refused requests');
    },
  },
  {
    point: 'close: stops every agent the scaler started',
    async run(ctx: Ctx) {
      await startOne(ctx, ctx.instance);
      await ctx.instance.close?.();
      await eventually(async () => (await runningIds(ctx)).length === 0, ctx.harness.settleMs ?? 60_000, 'agents still run after close()');
    },
  },
];

export const scalerContract: ContractSuite<'scaler', ScalerHarness> = { kind: 'scaler', points };
