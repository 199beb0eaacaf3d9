"""The symbols Chapter 5 defines, each with its one meaning (as the notation page lists it;
``tests/experiment/test_notation.py`` checks the two agree)."""

SYMBOLS = {
    '\\tau': 'temperature',
    '\\beta': 'inverse temperature $1/\\tau$',
    '\\pi': 'data distribution',
    '\\kappa': 'concentration of the vMF law',
    '\\phi': 'embedding',
    '\\hat R_n': 'empirical Rademacher complexity of the loss class',
    '\\eta': 'free parameter of the un-expected Bernstein inequality',
    '\\delta': 'confidence level $1 - \\delta$ of a bound',
    'K_r': 'curvature constant of the normalised linear class',
    '\\Xi': 'direction $A + u\\Xi$ in the normalised linear class',
    '\\vartheta': 'coordinates of the class near the truth',
    '\\mathcal H': 'Hessian of $L_k$ at $\\vartheta^\\star$',
    'C_3': 'bound on the third derivatives of the loss in $\\vartheta$',
    '\\varrho': 'PAC-Bayes posterior on the parameters',
    '\\mathcal P_g': 'PAC-Bayes prior on the parameters',
}
