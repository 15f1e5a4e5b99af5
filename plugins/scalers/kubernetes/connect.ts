// How the plugin reaches the API server: a kubeconfig file when the `kubeconfig` setting names
// one (an orchestrator outside the cluster), else the pod's service account (in a cluster).
import { existsSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { InputError, messageOf } from '../../../core/errors.ts';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface Connection {
  kubeConfig: KubeConfig;
  namespace: string;
  /** For logs: the kubeconfig path and context, or `in-cluster`. */
  source: string;
  server: string;
}

function refuse(reason: string): never {
  throw new InputError('SVC_ERR_SCALER_KUBERNETES_CONFIG', `kubernetes scaler: ${reason}`, { details: { reason } });
}

export function connect(settings: { kubeconfig?: string | undefined; context?: string | undefined; namespace?: string | undefined }): Connection {
  const kc = new KubeConfig();
  let source: string;
  if (settings.kubeconfig !== undefined) {
    if (!existsSync(settings.kubeconfig)) refuse(`kubeconfig ${settings.kubeconfig} does not exist (set plugins.kubernetes.kubeconfig to a readable file, or leave it unset in a cluster)`);
    try {
      kc.loadFromFile(settings.kubeconfig);
    } catch (error) {
      refuse(`kubeconfig ${settings.kubeconfig} cannot be loaded: ${messageOf(error).split('\n')[0]}`);
    }
    if (settings.context !== undefined) {
      if (kc.getContextObject(settings.context) === null) {
        refuse(`kubeconfig ${settings.kubeconfig} has no context "${settings.context}" (it has: ${kc.getContexts().map((c) => c.name).join(', ') || 'none'})`);
      }
      kc.setCurrentContext(settings.context);
    }
    source = `${settings.kubeconfig} (context ${kc.getCurrentContext()})`;
  } else {
    if (process.env['KUBERNETES_SERVICE_HOST'] === undefined || !existsSync(SERVICE_ACCOUNT_TOKEN)) {
      refuse('no kubeconfig setting and not running in a cluster (no KUBERNETES_SERVICE_HOST or service account token); set plugins.kubernetes.kubeconfig');
    }
    kc.loadFromCluster();
    source = 'in-cluster';
  }
  const cluster = kc.getCurrentCluster();
  if (cluster === null) refuse(`kubeconfig ${settings.kubeconfig ?? ''}: the current context "${kc.getCurrentContext()}" names no cluster`);
  const contextNamespace = kc.getContextObject(kc.getCurrentContext())?.namespace;
  // loadFromCluster puts the service account's namespace into its context.
  return { kubeConfig: kc, namespace: settings.namespace ?? contextNamespace ?? 'default', source, server: cluster.server };
}
