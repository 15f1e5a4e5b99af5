// `svc/testing`: what a plugin author needs to run our contract suites against their plugin,
// with any test runner (runContract / assertContract) or with tap (tapContract).
export * from '../extension-points/contracts/index.ts';
export { tapContract, type TapLike } from './tap.ts';
export { servedStorageHarness, startRouteServer, type RouteServer } from './route-server.ts';
export { definePlugin, type SvcPlugin, type PluginContext } from '../plugins/define-plugin.ts';
