"""``python -m cutorch_gemm {info,check,bench}``; see cutorch_gemm/cli.py."""
import sys

from cutorch_gemm.cli import main

if __name__ == "__main__":
    sys.exit(main())
