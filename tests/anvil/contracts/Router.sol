// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.37;

interface IERC20 {
    function balanceOf(address account) external view returns (uint256);
    function transfer(address to, uint256 value) external returns (bool);
}

/// Holds tokens and pays them out when asked.
contract Vault {
    event Forwarded(address indexed token, address indexed to, uint256 value);

    function forward(IERC20 token, address to, uint256 value) external returns (bool) {
        require(token.transfer(to, value), "Vault: transfer failed");
        emit Forwarded(address(token), to, value);
        return true;
    }
}

/// One more frame between the router and the vault.
contract Hop {
    function relay(Vault vault, IERC20 token, address to, uint256 value) external returns (bool) {
        return vault.forward(token, to, value);
    }
}

/// Calls the others several frames deep: router -> hop -> vault -> token.
contract Router {
    event Routed(address indexed to, uint256 value, uint256 vaultBefore);
    event Caught(string reason);

    /// Pays `value` out of the vault, tries to pay `tooMuch` (the inner revert is caught),
    /// then sends the attached ether on to `to`.
    function route(Hop hop, Vault vault, IERC20 token, address to, uint256 value, uint256 tooMuch)
        external
        payable
    {
        uint256 before = token.balanceOf(address(vault));
        hop.relay(vault, token, to, value);
        try hop.relay(vault, token, to, tooMuch) returns (bool) {
            revert("Router: expected a revert");
        } catch Error(string memory reason) {
            emit Caught(reason);
        }
        emit Routed(to, value, before);
        (bool sent,) = payable(to).call{value: msg.value}("");
        require(sent, "Router: ether not sent");
    }

    /// Pays `value`, then `tooMuch` without catching: the whole tx reverts.
    function strict(Hop hop, Vault vault, IERC20 token, address to, uint256 value, uint256 tooMuch) external {
        hop.relay(vault, token, to, value);
        hop.relay(vault, token, to, tooMuch);
    }
}
