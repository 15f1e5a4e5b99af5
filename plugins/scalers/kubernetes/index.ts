// Scaler `kubernetes` (docs/kubernetes.md): the plugin's definition. The client library
// (@kubernetes/client-node, ~1,000 modules and over a second of CPU to load) is imported only when
// an orchestrator signs in a kubernetes scaler: every other orchestrator start, and every svc
// command that lists the built-in plugins, would otherwise pay for it. The scaler is in scaler.ts.
import type { ScalerExtensionPoint } from '../../../core/extension-points/scaler.ts';
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import { KubernetesScalerSettings } from '../../../schemas/scaler-kubernetes.ts';

export const kubernetesScaler = definePlugin({
  id: 'kubernetes',
  kind: 'scaler',
  version: '0.1.0',
  kernelRange: '^0.9.0',
  description: 'Ephemeral svc-agent pods in a Kubernetes namespace',
  configSchema: KubernetesScalerSettings,
  async create({ config, logger }): Promise<ScalerExtensionPoint> {
    const { startKubernetesScaler } = await import('./scaler.ts');
    return startKubernetesScaler(config as KubernetesScalerSettings, logger);
  },
});

export default kubernetesScaler;
