// Composition root of `svc-orchestrator`: kernel + built-in plugins + subsystems.
import { startOrchestrator } from '../../kernel/orchestrator/app.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../kernel/orchestrator/subsystems.ts';
import { runServerProgram } from '../../core/lifecycle.ts';
import { orchestratorPlugins } from '../../plugins/builtin.ts';

export async function main(): Promise<number> {
  return runServerProgram('svc-orchestrator', async () => {
    const orchestrator = await startOrchestrator({ plugins: orchestratorPlugins, subsystems: ORCHESTRATOR_SUBSYSTEMS });
    // Its stop is logged through its own JSON logger (core/lifecycle.ts).
    return { url: orchestrator.url, stop: () => orchestrator.stop(), logger: orchestrator.ctx.logger };
  });
}
