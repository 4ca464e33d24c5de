/* The configuration reference, docs/configuration.md, as tsrnn-config-doc writes it. */
#ifndef TSRNN_TOOLS_CONFIG_DOC_REFERENCE_H
#define TSRNN_TOOLS_CONFIG_DOC_REFERENCE_H

#include <stdio.h>

#include "tsrnn/core.h"

/* Writes docs/configuration.md into `out`: the file's syntax, where values come from, then
 * every key of the schema with its type, default, accepted values (the text of the parser's
 * messages), the Darts / Lightning name it mirrors and an example; its sample error messages
 * come from the parser itself (and leave this thread's message cleared). The same schema
 * always gives the same bytes. TSRNN_ERR_USAGE when a schema line lacks its documentation or
 * its example does not parse (nothing is written then), TSRNN_ERR_IO when `out` fails,
 * TSRNN_ERR_NOMEM. */
enum tsrnn_status config_doc_write(FILE *out);

#endif
