package tui

// maxIndent is the deepest level drawn with its own indentation. Deeper
// spans are drawn marked with their depth instead, so a row of a 100k-deep
// chain costs what a shallow one does (indentation growing with depth made
// drawing such a chain quadratic in time and memory).
const maxIndent = 24

// walkTree visits the trees under roots in pre-order, children in the order
// kids lists them, without recursion: a chain may be any depth. visit gets
// a node, its depth (0 for roots) and whether it is its parent's last
// child, and returns whether to descend into it.
func walkTree(roots []int32, kids [][]int32, visit func(i int32, depth int, last bool) bool) {
	type item struct {
		i     int32
		depth int32
		last  bool
	}
	var stack []item
	push := func(xs []int32, depth int32) {
		for k := len(xs) - 1; k >= 0; k-- {
			stack = append(stack, item{xs[k], depth, k == len(xs)-1})
		}
	}
	push(roots, 0)
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if visit(it.i, int(it.depth), it.last) {
			push(kids[it.i], it.depth+1)
		}
	}
}

// subtreeSizes returns the number of spans in each node's subtree.
func subtreeSizes(roots []int32, kids [][]int32) []int {
	size := make([]int, len(kids))
	var order []int32
	walkTree(roots, kids, func(i int32, _ int, _ bool) bool {
		order = append(order, i)
		return true
	})
	for k := len(order) - 1; k >= 0; k-- {
		i := order[k]
		size[i] = 1
		for _, c := range kids[i] {
			size[i] += size[c]
		}
	}
	return size
}
