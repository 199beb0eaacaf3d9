"""The symbols Chapter 3 defines, each with its one meaning (as the notation page lists it;
``tests/experiment/test_notation.py`` checks the two agree)."""

SYMBOLS = {
    '\\tau': 'temperature',
    '\\beta': 'inverse temperature $1/\\tau$',
    '\\pi': 'data distribution',
    '\\kappa': 'concentration of the vMF law',
    '\\phi': 'embedding',
    'v_2': 'second central moment of the normalised negative weight $V$',
    'L_\\infty': 'limit risk',
    'Z_p': 'normalising function of the vMF law on $S^{p-1}$',
    'A_p': 'mean resultant length of the vMF law on $S^{p-1}$',
    '\\Psi': 'exact supremum of $\\operatorname{KL}(Q^\\phi_\\tau(x,\\cdot)\\Vert\\pi)$',
    '\\tau_k': 'temperature minimising the decoupled risk at $k$ negatives',
    'C_{\\mathrm{dec}}': 'constant of the rate of $\\tau_k$',
}
