// The agent's built-in plugins (the sandboxes) and how the agent's settings become their config
// slices. Only the agent's composition root imports this; it is kept apart from the
// orchestrator's list in plugins/builtin.ts so the agent does not load storage or custody code.
import type { SvcPlugin } from '../../core/plugins/index.ts';
import { containerSandbox } from './container/index.ts';
import { firecrackerSandbox } from './firecracker/index.ts';
import { processSandbox } from './process/index.ts';

export interface AgentPluginSettings {
  bwrap: 'auto' | 'always' | 'never';
  containerRuntime: 'auto' | 'podman' | 'docker';
  firecracker: { binary: string; kernelImage: string | undefined; rootfs: string | undefined };
  workDir: string;
}

export interface AgentPluginSelection {
  builtIns: SvcPlugin[];
  config: Record<string, unknown>;
}

/** Every built-in sandbox, whatever the agent's settings enable (the contract test enumerates this). */
export const BUILT_IN_SANDBOXES: readonly SvcPlugin[] = [processSandbox as SvcPlugin, containerSandbox as SvcPlugin, firecrackerSandbox as SvcPlugin];

export function agentPlugins(settings: AgentPluginSettings & { sandbox: string }, extra: readonly SvcPlugin[] = []): AgentPluginSelection {
  const builtIns: SvcPlugin[] = [processSandbox as SvcPlugin, containerSandbox as SvcPlugin];
  const config: Record<string, unknown> = {
    'sandbox:process': { bwrap: settings.bwrap },
    'sandbox:container': { runtime: settings.containerRuntime },
  };
  // Firecracker only when asked for: it needs a guest kernel and root file system image.
  if (settings.sandbox === 'firecracker' || settings.firecracker.kernelImage !== undefined) {
    builtIns.push(firecrackerSandbox as SvcPlugin);
    config['sandbox:firecracker'] = {
      command: [settings.firecracker.binary],
      ...(settings.firecracker.kernelImage === undefined ? {} : { kernelImage: settings.firecracker.kernelImage }),
      ...(settings.firecracker.rootfs === undefined ? {} : { rootfs: settings.firecracker.rootfs }),
    };
  }
  builtIns.push(...extra);
  return { builtIns, config };
}
