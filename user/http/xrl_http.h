/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * xrl http: the request layer's decision service (for nginx auth_request,
 * envoy ext_authz, HAProxy, applications). The CLI's `xrl http` calls it.
 */
#ifndef XRL_HTTP_H
#define XRL_HTTP_H

/*
 * Run the service with argv (argv[0] the command's name) until SIGTERM or
 * SIGINT; instance is --instance's name (for escalation). The exit code:
 * 0, 1 (could not start), 2 (usage).
 */
int xrl_http_main(const char *instance, int argc, char **argv);

#endif /* XRL_HTTP_H */
