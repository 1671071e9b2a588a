# Author: Jan Koscielniak, (c) 2020
# Released under Gnu GPL v2.0, see LICENSE file for details

"""Static variables shared between multiple modules."""

WARM_UP = 250
