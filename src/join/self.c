/*
 * self.c
 *		Self joins: when both sides of a GpuJoin read the same rows of one
 *		table, the rows are read once and the self-join engines find each
 *		pair once (path.c for distance joins, lateral.c for LATERAL kNN).
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"

#include "join/join.h"

/*
 * Does orel read exactly the rows of table relid that quals (on range
 * table entry rti) select: one plain table, no inheritance children, no
 * sample, the same restriction clauses?  Then a join of it with those
 * rows is a self join, read once.
 */
bool
GjSameTableRows(PlannerInfo *root, RelOptInfo *orel, Oid relid, List *quals, Index rti)
{
	RangeTblEntry *rte;
	List	   *oq;

	if (orel->reloptkind != RELOPT_BASEREL || orel->rtekind != RTE_RELATION)
		return false;
	rte = planner_rt_fetch(orel->relid, root);
	if (rte->relid != relid || rte->inh || rte->tablesample != NULL)
		return false;
	oq = (List *) copyObject(extract_actual_clauses(orel->baserestrictinfo, false));
	ChangeVarNodes((Node *) oq, orel->relid, rti, 0);
	return equal(oq, quals);
}

/*
 * The inner column of each outer column when both sides read the same
 * rows of one table (GjSameTableRows, and each column the outer side
 * needs among the inner's), so that the rows are read once and the
 * self-join engine finds each pair once; else NIL.
 */
List *
GjSelfMap(PlannerInfo *root, RelOptInfo *outerrel, RelOptInfo *innerrel,
		  List *outer_tlist, List *inner_tlist)
{
	RangeTblEntry *ri;
	List	   *map = NIL;
	ListCell   *lc;

	if (innerrel->reloptkind != RELOPT_BASEREL || innerrel->rtekind != RTE_RELATION)
		return NIL;
	ri = planner_rt_fetch(innerrel->relid, root);
	if (ri->inh || ri->tablesample != NULL ||
		!GjSameTableRows(root, outerrel, ri->relid,
						 extract_actual_clauses(innerrel->baserestrictinfo, false),
						 innerrel->relid))
		return NIL;
	foreach(lc, outer_tlist)
	{
		Var		   *v = (Var *) lfirst_node(TargetEntry, lc)->expr;
		ListCell   *lc2;
		int			k = 0,
					found = 0;

		if (!IsA(v, Var) || v->varno != outerrel->relid)
			return NIL;
		foreach(lc2, inner_tlist)
		{
			Var		   *w = (Var *) lfirst_node(TargetEntry, lc2)->expr;

			k++;
			if (IsA(w, Var) && w->varno == innerrel->relid && w->varattno == v->varattno)
			{
				found = k;
				break;
			}
		}
		if (found == 0)
			return NIL;
		map = lappend(map, makeInteger(found));
	}
	return map;
}

