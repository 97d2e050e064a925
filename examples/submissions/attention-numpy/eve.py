def softmax_rows(S, mask=None)
    return S
