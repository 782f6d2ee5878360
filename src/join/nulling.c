/*
 * nulling.c
 *		A plain-SQL join's plan with its Vars' nulling marks as
 *		PostgreSQL 16 and later check them (nothing to do on 15).
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"

#include "join/join.h"

#if PG_VERSION_NUM >= 160000
/*
 * PostgreSQL 16 marks each Var above an outer join with the joins that can
 * null it (varnullingrels), and setrefs.c matches the plan's target list,
 * its qual and custom_exprs against custom_scan_tlist requiring the marks
 * to be equal.  The target list and qual are what the plan above reads
 * (their Vars carry this join's mark on the nullable side); the join's own
 * quals, read before null-extension, carry none.  The executor never reads
 * the marks, so the scan tuple's Vars and the join's quals take, for each
 * column, the mark it has in the target list and qual.
 */
typedef struct NullingMarks
{
	List	   *vars;			/* the Vars of the target list and qual */
} NullingMarks;

static Node *
TakeNullingMarks(Node *node, NullingMarks *marks)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varlevelsup == 0)
	{
		Var		   *v = (Var *) copyObject(node);
		ListCell   *lc;

		v->varnullingrels = NULL;
		foreach(lc, marks->vars)
		{
			Var		   *m = lfirst(lc);

			if (IsA(m, Var) && m->varno == v->varno && m->varattno == v->varattno &&
				m->varlevelsup == 0)
			{
				v->varnullingrels = bms_copy(m->varnullingrels);
				break;
			}
		}
		return (Node *) v;
	}
	return expression_tree_mutator(node, TakeNullingMarks, marks);
}
#endif

/* custom_scan_tlist and custom_exprs with the target list's marks (above). */
void
GjAlignNullingMarks(CustomScan *cscan)
{
#if PG_VERSION_NUM >= 160000
	NullingMarks marks;

	marks.vars = pull_var_clause((Node *) cscan->scan.plan.targetlist, PVC_RECURSE_PLACEHOLDERS);
	marks.vars = list_concat(marks.vars,
							 pull_var_clause((Node *) cscan->scan.plan.qual, PVC_RECURSE_PLACEHOLDERS));
	cscan->custom_scan_tlist = (List *) TakeNullingMarks((Node *) cscan->custom_scan_tlist, &marks);
	cscan->custom_exprs = (List *) TakeNullingMarks((Node *) cscan->custom_exprs, &marks);
#endif
}
